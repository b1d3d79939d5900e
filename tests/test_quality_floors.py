"""Quality floors on real collections, end to end: ingest -> chunk -> index -> eval.

Floors only move up. Each names the published figure it tracks (BEIR, Thakur et al.
2021; Anserini; bm25s, Lù 2024). Under CI a missing dataset fails instead of skipping.
"""

from __future__ import annotations

import pytest

from ctxselect.experiments import evaluate_corpus

FLOORS = {
    # dataset: (floor, published BM25 nDCG@10 range)
    "scifact": (0.66, "0.665 BEIR / 0.679 Anserini / 0.687 bm25s"),
    "nfcorpus": (0.31, "0.325 BEIR / 0.322 Anserini / 0.321 bm25s"),
}


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(FLOORS))
def test_bm25_ndcg_at_10_floor(name, request, tmp_path):
    folder = request.getfixturevalue(f"{name}_dir")
    floor, published = FLOORS[name]
    result = evaluate_corpus(
        folder / "corpus.jsonl",
        folder / "queries.jsonl",
        folder / "qrels" / "test.tsv",
        mode="bm25",
        metrics=["ndcg@10", "recall@100"],
        index=tmp_path / "ix",
        run_out=tmp_path / "run.trec",
    )
    assert result.n_queries == {"scifact": 300, "nfcorpus": 323}[name]
    assert result.metrics["ndcg@10"] >= floor, f"below floor {floor} (published {published})"
    assert (tmp_path / "run.trec").stat().st_size > 0

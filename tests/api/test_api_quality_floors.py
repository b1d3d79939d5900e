"""Quality floors on real collections, end to end: ingest -> chunk -> index -> eval.

Floors only move up. Each names the published figure it tracks (BEIR, Thakur et al.
2021; Anserini; bm25s, Lù 2024). Under CI a missing dataset fails instead of skipping.
"""

from __future__ import annotations

import pytest

from ctxselect.api.evaluate import evaluate_corpus

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


@pytest.mark.data
def test_eval_metrics_equal_trec_eval_on_the_written_run(scifact_dir, tmp_path):
    """Our nDCG@10 and recall@100 equal pytrec_eval's on the TREC run `eval` wrote, to 1e-6."""
    import pytrec_eval

    from ctxselect.eval import load_qrels, read_trec_run

    run_file = tmp_path / "run.trec"
    result = evaluate_corpus(
        scifact_dir / "corpus.jsonl",
        scifact_dir / "queries.jsonl",
        scifact_dir / "qrels" / "test.tsv",
        metrics=["ndcg@10", "recall@100"],
        index=tmp_path / "ix",
        run_out=run_file,
        per_query=True,
    )
    qrels = load_qrels(scifact_dir / "qrels" / "test.tsv")
    run = read_trec_run(run_file)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100"})
    theirs = evaluator.evaluate(run)
    assert result.per_query is not None
    for qid, ours in result.per_query.items():
        reference = theirs.get(qid, {"ndcg_cut_10": 0.0, "recall_100": 0.0})
        assert ours["ndcg@10"] == pytest.approx(reference["ndcg_cut_10"], abs=1e-6)
        assert ours["recall@100"] == pytest.approx(reference["recall_100"], abs=1e-6)
    mean = sum(v["ndcg_cut_10"] for v in theirs.values()) / len(result.per_query)
    assert result.metrics["ndcg@10"] == pytest.approx(mean, abs=1e-6)

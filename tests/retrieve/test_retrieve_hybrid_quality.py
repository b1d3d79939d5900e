"""Quality floors of tuned hybrid retrieval with the real model, through a stored index.

The collection is indexed with ``embedder`` = all-MiniLM-L6-v2 (vectors reused from this
run's on-disk cache, so each collection is embedded once per CI run), then
``tune_index`` tunes the fusion with 5-fold cross-validation: ``report.cv`` is
out-of-sample. Floors only move up. Published nDCG@10 they track: all-MiniLM-L6-v2
alone 0.645 / 0.316, BM25 (bm25s) 0.686 / 0.321, plain RRF (k = 60) of the two
0.717 / 0.352, bge-base alone 0.741 / 0.374 (SciFact / NFCorpus, BEIR).
"""

from __future__ import annotations

import pytest

from _support.dense_helpers import cached_minilm, minilm
from ctxselect import ChunkSpec, index_paths, open_index
from ctxselect.api.tune import tune_index

FLOORS = {"scifact": 0.725, "nfcorpus": 0.355}
LABELED = {"scifact": 300, "nfcorpus": 323}


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FLOORS))
def test_tuned_hybrid_ndcg_at_10_floor_on_a_stored_index(name, request, tmp_path) -> None:
    folder = request.getfixturevalue(f"{name}_dir")
    ix = tmp_path / "ix"
    spec = ChunkSpec(chunker="tokens", size=100_000)  # one chunk per document, as BEIR
    index_paths([folder / "corpus.jsonl"], ix, chunk=spec, embedder=cached_minilm(request))
    report = tune_index(
        ix, folder / "queries.jsonl", folder / "qrels" / "test.tsv", embedder=minilm()
    )
    assert report.n_queries == LABELED[name]
    assert report.cv >= FLOORS[name], f"out-of-sample nDCG@10 {report.cv:.4f}"
    assert (
        report.cv
        > report.baselines["rrf"]
        > max(report.baselines["keyword"], report.baselines["dense"])
    )
    with open_index(ix, embedder=minilm()) as idx:  # what search, select and MCP read
        assert idx.manifest["default_mode"] == "hybrid"
        assert idx.fusion == report.spec
        assert idx.info().settings["tuning"]["cv"] == pytest.approx(report.cv, abs=1e-6)
        hits = idx.search("a query about cells", 5)
        assert len(hits) == 5 and hits == idx.search("a query about cells", 5, "hybrid")

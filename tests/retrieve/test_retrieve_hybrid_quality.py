"""Quality floors of tuned hybrid retrieval with the real model, out-of-sample (5-fold CV).

Floors only move up. Published nDCG@10 they track: all-MiniLM-L6-v2 alone 0.645 / 0.316,
BM25 (bm25s) 0.686 / 0.321, plain RRF (k = 60) of the two 0.717 / 0.352, bge-base alone
0.741 / 0.374 (SciFact / NFCorpus, BEIR).
"""

from __future__ import annotations

import pytest

from ctxselect.retrieve import BM25Retriever, HybridRetriever
from ctxselect.tuning import tune_fusion
from dense_helpers import beir_table, labeled, real_dense

FLOORS = {"scifact": 0.725, "nfcorpus": 0.355}


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FLOORS))
def test_tuned_hybrid_ndcg_at_10_floor(name, request) -> None:
    folder = request.getfixturevalue(f"{name}_dir")
    dense = real_dense(request, folder)
    hybrid = HybridRetriever(BM25Retriever.build(beir_table(folder)), dense)
    queries, qrels = labeled(folder)
    report = tune_fusion(hybrid, queries, qrels, folds=5, seed=0)
    assert report.n_queries == {"scifact": 300, "nfcorpus": 323}[name]
    assert report.cv >= FLOORS[name], f"out-of-sample nDCG@10 {report.cv:.4f}"
    assert (
        report.cv
        > report.baselines["rrf"]
        > max(report.baselines["keyword"], report.baselines["dense"])
    )

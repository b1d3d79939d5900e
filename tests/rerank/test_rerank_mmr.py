"""MMR: near-duplicates of what is picked sink; λ = 1 keeps the retriever's order."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from ctxselect.errors import ConfigError
from ctxselect.rerank import MMRReranker, Reranker, make_reranker
from ctxselect.types import Hit

VECTORS = {
    "a#0": [1.0, 0.0, 0.0],
    "a#1": [0.99, 0.14, 0.0],  # a near-duplicate of a#0
    "b#0": [0.0, 1.0, 0.0],
    "c#0": [0.0, 0.0, 1.0],
}


def _vectors_of(ids):
    rows = np.array([VECTORS[i] for i in ids])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _hits() -> list[Hit]:
    scores = {"a#0": 10.0, "a#1": 9.5, "b#0": 8.0, "c#0": 2.0}
    return [
        Hit(rank, cid, cid.split("#")[0], s, 0, 1, 1, cid)
        for rank, (cid, s) in enumerate(scores.items(), 1)
    ]


def test_lambda_one_keeps_the_order() -> None:
    out = MMRReranker(_vectors_of, 1.0).rerank("q", _hits())
    assert [h.chunk_id for h in out] == ["a#0", "a#1", "b#0", "c#0"]


def test_near_duplicate_sinks_and_scores_never_increase() -> None:
    mmr = make_reranker("mmr", vectors_of=_vectors_of, lambda_=0.5)
    assert isinstance(mmr, Reranker)
    out = mmr.rerank("q", _hits())
    assert [h.chunk_id for h in out] == ["a#0", "b#0", "c#0", "a#1"]
    assert [h.rank for h in out] == [1, 2, 3, 4]
    assert all(x.score >= y.score for x, y in pairwise(out))
    assert out[0].score == pytest.approx(0.5)  # λ · relevance 1, nothing picked yet


def test_k_cuts_and_bad_settings_are_errors() -> None:
    assert len(MMRReranker(_vectors_of).rerank("q", _hits(), 2)) == 2
    assert MMRReranker(_vectors_of).rerank("q", []) == []
    with pytest.raises(ConfigError, match="lambda"):
        MMRReranker(_vectors_of, 1.5)
    with pytest.raises(ConfigError, match="1 vectors for 4 chunk ids"):
        MMRReranker(lambda ids: np.zeros((1, 3))).rerank("q", _hits())

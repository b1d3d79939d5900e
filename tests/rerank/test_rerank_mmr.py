"""MMR: near-duplicates of what is picked sink; λ = 1 keeps the retriever's order."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from ctxselect.errors import ConfigError
from ctxselect.rerank import MMRReranker, Reranker, make_reranker, mmr_order
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


def test_mmr_order_is_the_rerankers_pick() -> None:
    hits = _hits()
    out = MMRReranker(_vectors_of, 0.5).rerank("q", hits)
    vectors = _vectors_of([h.chunk_id for h in hits])
    scores = np.array([h.score for h in hits])
    relevance = (scores - scores.min()) / (scores.max() - scores.min())
    order, values = mmr_order(relevance, lambda i: vectors @ vectors[i], 0.5, len(hits))
    assert [hits[i].chunk_id for i in order] == [h.chunk_id for h in out]
    assert values == pytest.approx([h.score for h in out])


def test_a_refused_candidate_is_set_aside_without_counting() -> None:
    hits = _hits()  # a#0, its near-duplicate a#1, b#0, c#0
    vectors = _vectors_of([h.chunk_id for h in hits])
    relevance = np.array([1.0, 0.95, 0.8, 0.2])
    asked: list[int] = []

    def admit(i: int) -> bool:
        asked.append(i)
        return i != 0  # a#0 does not fit

    order, _ = mmr_order(relevance, lambda i: vectors @ vectors[i], 0.5, 2, admit)
    # a#0 is refused: it is not picked, does not count in k, and its near-duplicate a#1
    # is not made redundant by it, so a#1 comes next as the most relevant left.
    assert order == [1, 2]
    assert asked == [0, 1, 2]
    kept, _ = mmr_order(relevance, lambda i: vectors @ vectors[i], 0.5, 2)
    assert kept == [0, 2]  # with a#0 taken, a#1 sinks below b#0


def test_values_within_tie_go_to_the_better_rank() -> None:
    # Equal in exact arithmetic, apart in the last bit after float sums in another order.
    relevance = np.array([0.3, 0.1 + 0.2, 0.2])
    assert relevance[1] > relevance[0]

    def no_similarity(i: int) -> np.ndarray:
        return np.zeros(3)

    assert mmr_order(relevance, no_similarity, 1.0, 1)[0] == [1]  # the last bit decides
    assert mmr_order(relevance, no_similarity, 1.0, 1, tie=1e-12)[0] == [0]  # the rank does

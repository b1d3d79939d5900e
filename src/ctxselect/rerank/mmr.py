"""Maximal marginal relevance: trade a hit's relevance against its likeness to those above.

MMR (Carbonell & Goldstein, SIGIR 1998): pick, one at a time, the hit maximising
``λ · rel(h) - (1 - λ) · max(0, max_{s picked} cos(h, s))``. Relevance is the retriever's
score scaled to [0, 1] over the candidates, so λ means the same for every mode. Negative
cosines count as 0 (unlike is not rewarded), so the picked values never increase: the
MMR value is each hit's score and the list stays best first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ctxselect.config import DEFAULT_MMR_LAMBDA
from ctxselect.errors import ConfigError
from ctxselect.rerank.base import RERANKERS, check_depth, reranked
from ctxselect.types import Hit

VectorsOf = Callable[[Sequence[str]], np.ndarray]
"""chunk ids -> their vectors, one unit-length row each (a dense retriever's ``vectors_of``)."""


@RERANKERS.register("mmr")
class MMRReranker:
    """Reorder hits so near-duplicates of what is already picked sink.

    With ``lambda_ = 1`` the order is the retriever's; lower values favour diversity.
    """

    name = "mmr"

    def __init__(self, vectors_of: VectorsOf, lambda_: float = DEFAULT_MMR_LAMBDA) -> None:
        """Set where vectors come from and the trade-off.

        Args:
            vectors_of: Returns the unit-length vectors of chunk ids (e.g.
                ``DenseRetriever.vectors_of``, or an embedder over the hit texts).
            lambda_: Weight of relevance against novelty, from 0 to 1.

        Raises:
            ConfigError: ``lambda_`` is outside [0, 1] or ``vectors_of`` is not callable.
        """
        if not callable(vectors_of):
            raise ConfigError("vectors_of must be a function from chunk ids to vectors")
        if isinstance(lambda_, bool) or not 0.0 <= float(lambda_) <= 1.0:
            raise ConfigError(f"MMR lambda must be from 0 to 1, got {lambda_!r}")
        self.vectors_of = vectors_of
        self.lambda_ = float(lambda_)

    def rerank(self, query: str, hits: Sequence[Hit], k: int | None = None) -> list[Hit]:
        """Return ``hits`` in MMR order (the first is always the most relevant).

        Ties pick the hit ranked higher by the retriever.
        """
        check_depth(k)
        hits = list(hits)
        if not hits:
            return []
        n = len(hits) if k is None else min(k, len(hits))
        vectors = np.asarray(self.vectors_of([h.chunk_id for h in hits]), dtype=np.float64)
        if vectors.shape[0] != len(hits):
            raise ConfigError(
                f"vectors_of returned {vectors.shape[0]} vectors for {len(hits)} chunk ids"
            )
        scores = np.array([h.score for h in hits], dtype=np.float64)
        span = scores.max() - scores.min()
        relevance = (scores - scores.min()) / span if span > 0 else np.ones(len(hits))
        similarity = vectors @ vectors.T
        order, values = mmr_order(relevance, lambda i: similarity[i], self.lambda_, n)
        return reranked(hits, order, values)


def mmr_order(
    relevance: np.ndarray,
    similar_to: Callable[[int], np.ndarray],
    lambda_: float,
    k: int,
    admit: Callable[[int], bool] | None = None,
    *,
    tie: float = 0.0,
) -> tuple[list[int], list[float]]:
    """Pick up to ``k`` candidates greedily by MMR; return their positions and MMR values.

    Args:
        relevance: Each candidate's relevance, in [0, 1], in the retriever's rank order
            (a tie picks the candidate ranked higher).
        similar_to: Candidate ``i`` -> its similarity to every candidate (negative
            values count as 0).
        lambda_: Weight of relevance against novelty, from 0 to 1.
        k: How many candidates to pick at most.
        admit: Asked about each candidate as MMR reaches it (e.g. does it fit the tokens
            left?). One it refuses is set aside: not picked, not counted in ``k``, and
            no reason for the others to be redundant.
        tie: MMR values within this of the best count as equal to it, so float noise
            in values equal in exact arithmetic does not decide between them.
    """
    redundancy = np.zeros(len(relevance))
    left = np.ones(len(relevance), dtype=bool)
    order: list[int] = []
    values: list[float] = []
    while len(order) < k and left.any():
        value = lambda_ * relevance - (1.0 - lambda_) * redundancy
        value[~left] = -np.inf
        # The first maximum: the retriever's better rank.
        best = int(np.argmax(value >= value.max() - tie) if tie else np.argmax(value))
        left[best] = False
        if admit is not None and not admit(best):
            continue
        order.append(best)
        values.append(float(value[best]))
        redundancy = np.maximum(redundancy, np.maximum(similar_to(best), 0.0))
    return order, values

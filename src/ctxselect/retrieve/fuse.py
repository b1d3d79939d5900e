"""Fuse a keyword ranking and a dense ranking into one.

Two methods, named as in :class:`ctxselect.config.FuseSpec`, over a :class:`Pool`: the
union of each side's top ``spec.depth`` items, with both sides' scores for every item.

- ``rrf``, reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): an item at
  rank r of a side's list earns ``w / (k + r)``; an item outside a list earns nothing
  from it. Scores are ignored, only ranks count.
- ``convex``, a convex combination of normalised scores (Bruch, Gai & Ingber, TOIS 2023):
  ``(1 - w) * norm(keyword) + w * norm(dense)``, each side normalised over the pool,
  ``minmax`` (to [0, 1]) or ``zscore`` (mean 0, standard deviation 1).

``w`` is ``FuseSpec.weight``, the dense side's share, and the keyword side gets ``1 - w``.
A fused ranking is best first with ties broken on the key (table rows follow chunk_id
order), so runs are reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ctxselect.config import FuseSpec
from ctxselect.registry import Registry

Ranked = Sequence[tuple[int, float]]
"""One side's ranking: ``(key, score)`` pairs, best first; keys are table rows."""

Normalizer = Callable[[np.ndarray], np.ndarray]
NORMS: Registry[Normalizer] = Registry("normalisation")
"""normalisation name -> function from a side's pool scores to normalised scores."""


@dataclass(frozen=True, slots=True, eq=False)
class Pool:
    """The items to fuse for one query, with both sides' scores and ranks.

    Attributes:
        keys: Item keys (table rows), ascending.
        keyword: Keyword score of each item (0 for a chunk the keyword side does not
            match, as BM25 scores it).
        dense: Dense score of each item.
        keyword_rank: Rank of each item in the keyword side's list, from 1; 0 when the
            item is not in that list.
        dense_rank: The same for the dense side.
    """

    keys: np.ndarray
    keyword: np.ndarray
    dense: np.ndarray
    keyword_rank: np.ndarray
    dense_rank: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


def pool(
    keyword: Ranked,
    dense: Ranked,
    depth: int,
    keyword_score: Callable[[np.ndarray], np.ndarray] | None = None,
    dense_score: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Pool:
    """Pool the first ``depth`` items of each side and score every item on both sides.

    Args:
        keyword: The keyword ranking, best first (it may run deeper than ``depth``:
            its deeper scores are looked up, not pooled).
        dense: The dense ranking, best first (likewise).
        depth: Items each side contributes.
        keyword_score: Scores of keys on the keyword side, for keys missing from
            ``keyword``; default: the lowest score ``keyword`` holds (the list's last).
        dense_score: The same for the dense side.
    """
    keys = np.array(
        sorted({key for key, _ in keyword[:depth]} | {key for key, _ in dense[:depth]}),
        dtype=np.int64,
    )
    sides = []
    for ranked, exact in ((keyword, keyword_score), (dense, dense_score)):
        known = {key: score for key, score in ranked}
        ranks = {key: rank for rank, (key, _) in enumerate(ranked[:depth], 1)}
        missing = np.array([key not in known for key in keys.tolist()], dtype=bool)
        scores = np.array([known.get(key, 0.0) for key in keys.tolist()], dtype=np.float64)
        if missing.any():
            if exact is not None:
                scores[missing] = exact(keys[missing])
            else:
                scores[missing] = min(known.values()) if known else 0.0
        sides.append((scores, np.array([ranks.get(k, 0) for k in keys.tolist()], dtype=np.int64)))
    return Pool(keys, sides[0][0], sides[1][0], sides[0][1], sides[1][1])


@NORMS.register("minmax")
def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale scores to [0, 1]: ``(s - min) / (max - min)``; all equal -> all 0."""
    scores = np.asarray(scores, dtype=np.float64)
    if not len(scores):
        return scores
    low, span = scores.min(), scores.max() - scores.min()
    return (scores - low) / span if span > 0 else np.zeros_like(scores)


@NORMS.register("zscore")
def zscore(scores: np.ndarray) -> np.ndarray:
    """Standardise scores: ``(s - mean) / std`` (population std); all equal -> all 0."""
    scores = np.asarray(scores, dtype=np.float64)
    if not len(scores):
        return scores
    std = scores.std()
    return (scores - scores.mean()) / std if std > 0 else np.zeros_like(scores)


FUSIONS: Registry[Callable[[Pool, FuseSpec], np.ndarray]] = Registry("fusion method")
"""fusion method name -> function ``(pool, spec) -> fused score of each pooled item``."""


@FUSIONS.register("rrf")
def rrf(items: Pool, spec: FuseSpec) -> np.ndarray:
    """Reciprocal rank fusion: ``sum over sides of weight / (k + rank)``, rank from 1."""
    out = np.zeros(len(items))
    for ranks, weight in ((items.keyword_rank, 1.0 - spec.weight), (items.dense_rank, spec.weight)):
        listed = ranks > 0
        out[listed] += weight / (spec.k + ranks[listed])
    return out


@FUSIONS.register("convex")
def convex(items: Pool, spec: FuseSpec) -> np.ndarray:
    """Convex combination of each side's scores, normalised over the pool (``spec.norm``)."""
    normalize = NORMS.get(spec.norm)
    return (1.0 - spec.weight) * normalize(items.keyword) + spec.weight * normalize(items.dense)


def fuse_pool(items: Pool, spec: FuseSpec, k: int | None = None) -> list[tuple[int, float]]:
    """Fuse a pool with ``spec``; return ``(key, score)`` best first, ties by key.

    Raises:
        UnknownNameError: ``spec.method`` or ``spec.norm`` is not registered.
    """
    NORMS.check(spec.norm)
    scores = FUSIONS.get(spec.method)(items, spec)
    order = np.lexsort((items.keys, -scores))
    if k is not None:
        order = order[:k]
    return list(zip(items.keys[order].tolist(), scores[order].tolist(), strict=True))


def fuse(
    keyword: Ranked, dense: Ranked, spec: FuseSpec, k: int | None = None
) -> list[tuple[int, float]]:
    """Fuse two ranked lists: :func:`pool` at ``spec.depth``, then :func:`fuse_pool`.

    A key missing from one list gets that list's lowest score on that side.
    """
    return fuse_pool(pool(keyword, dense, spec.depth), spec, k)

"""Exact dense scoring: which rows may be in the top ``k``, their dot products, their order.

Every dense search ends here, through the HNSW graph or not, so a hit carries the same
score whichever way it was found: rows near the k-th best are re-scored exactly
(:func:`exact_scores`, summed the same way wherever a row lies) and ranked best first,
ties by chunk_id. :class:`StackedVectors` reads a stored index's segments as one matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

SCORE_NOISE = 1e-5
"""How far apart BLAS may put two equal dot products: a float32 matrix-vector product
sums a row differently by its position in the matrix (about 1e-7 on unit vectors), so
rows this close to the k-th best score are re-scored exactly before ranking."""


ANN_SLACK = 16
"""Extra candidates asked of the graph beyond ``k``: rows tied with (or a rounding error
from) the k-th best are re-scored exactly too, so ties break on chunk_id as in exact
search instead of on the graph's visiting order."""


def candidates(scores: np.ndarray, k: int, noise: float = SCORE_NOISE) -> np.ndarray:
    """Return the rows that may be among the ``k`` best finite scores (ascending).

    Every row within ``noise`` of the k-th best stays, so exact re-scoring decides.
    """
    finite = np.isfinite(scores)
    rows = finite.nonzero()[0] if not finite.all() else np.arange(len(scores))
    if len(rows) <= k:
        return rows
    values = scores[rows]
    kth = np.partition(values, len(values) - k)[len(values) - k]
    return rows[values >= kth - noise]


def exact_scores(vectors: Any, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Return the dot products of ``vectors[rows]`` with ``query``, each row summed the
    same way wherever it lies (einsum, not BLAS): equal vectors get equal scores, in a
    delta segment or in the base, so ties break on chunk_id as in a rebuild."""
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    block = np.asarray(vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32)
    return np.einsum("ij,j->i", block, np.asarray(query, dtype=np.float32))


def best_first(
    rows: np.ndarray, values: np.ndarray, ids: Sequence[str] | None = None
) -> np.ndarray:
    """Return the positions of ``rows`` by descending value; ties by row, or by
    ``ids[row]`` when given (rows not in chunk_id order)."""
    if ids is None or len(np.unique(values)) == len(values):
        return np.lexsort((rows, -values))
    ranked = sorted(range(len(rows)), key=lambda i: (-float(values[i]), ids[int(rows[i])]))
    return np.array(ranked, dtype=np.int64)


class StackedVectors:
    """Row blocks read as one matrix without copying them: the base segment's vectors
    (memory-mapped), then each delta segment's. Supports what search needs: ``@`` a
    query vector, row lookup, ``len`` and ``shape``."""

    def __init__(self, parts: Sequence[np.ndarray]) -> None:
        self.parts = [np.asarray(p, dtype=np.float32) for p in parts]
        sizes = [len(p) for p in self.parts]
        self.starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.shape = (int(self.starts[-1]), int(self.parts[0].shape[1]))

    def __len__(self) -> int:
        return self.shape[0]

    def __matmul__(self, query: np.ndarray) -> np.ndarray:
        return np.concatenate([p @ query for p in self.parts])

    def __getitem__(self, rows: Any) -> np.ndarray:
        if isinstance(rows, int | np.integer):
            block = int(np.searchsorted(self.starts, rows, side="right")) - 1
            return self.parts[block][int(rows) - int(self.starts[block])]
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.shape[1]), dtype=np.float32)
        blocks = np.searchsorted(self.starts, rows, side="right") - 1
        for block in np.unique(blocks).tolist():
            at = blocks == block
            out[at] = self.parts[block][rows[at] - self.starts[block]]
        return out

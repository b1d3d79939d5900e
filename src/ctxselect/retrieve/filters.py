"""Row masks: the chunks a filtered search may rank, applied inside every retriever.

A :class:`RowMask` says, for every global row of a snapshot (base rows, then delta rows),
whether its chunk may be returned. Retrievers rank only allowed rows, so a search for
``k`` hits returns ``k`` whenever ``k`` allowed chunks score, however deep they rank
unfiltered (a filter applied after truncation would return fewer). ``api/filters.py``
turns a :class:`ctxselect.types.Filter` into a mask; this module only applies one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ctxselect.errors import IndexMismatchError
from ctxselect.types import Hit

NARROW = 0.1
"""Below this share of allowed rows, dense retrieval scores the allowed rows exactly
instead of asking the HNSW graph (whose neighbours would mostly be filtered out)."""


@dataclass(frozen=True, slots=True, eq=False)
class RowMask:
    """The rows a search may rank.

    Attributes:
        allow: One bool per row (True: may be returned).
        rows: The allowed rows, ascending (``flatnonzero(allow)``).
    """

    allow: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, allow: np.ndarray) -> RowMask:
        """Wrap a bool array (one entry per row)."""
        flags = np.ascontiguousarray(allow, dtype=bool)
        return cls(flags, np.flatnonzero(flags))

    @property
    def share(self) -> float:
        """The fraction of rows allowed."""
        return len(self.rows) / len(self.allow) if len(self.allow) else 0.0

    def check(self, n: int) -> None:
        """Raise unless the mask covers exactly ``n`` rows.

        Raises:
            IndexMismatchError: It was made for another generation of the index.
        """
        if len(self.allow) != n:
            raise IndexMismatchError(
                f"a row filter made for {len(self.allow)} rows was applied to {n}: make it "
                f"again from the index's current generation (Index.search does)"
            )


def mask_scores(scores: np.ndarray, mask: RowMask | None) -> np.ndarray:
    """Zero the scores of rows ``mask`` leaves out (in place; returns ``scores``)."""
    if mask is not None:
        mask.check(len(scores))
        np.multiply(scores, mask.allow, out=scores)
    return scores


def keep_rows(
    rows: np.ndarray, values: np.ndarray, mask: RowMask | None
) -> tuple[np.ndarray, np.ndarray]:
    """Keep the ``(rows, values)`` pairs whose row ``mask`` allows."""
    if mask is None:
        return rows, values
    keep = mask.allow[rows]
    return rows[keep], values[keep]


def deepened(
    search: Callable[[str, int], list[Hit]],
    query: str,
    k: int,
    mask: RowMask,
    row_of: Mapping[str, int],
    limit: int,
) -> list[Hit]:
    """The ``k`` best hits ``mask`` allows, from a search that cannot filter by itself.

    ``search(query, depth)`` is asked for 4x more hits at a time (at most ``limit``) until
    ``k`` allowed hits are found or its ranking runs out; ranks count the kept hits only.
    For a retriever whose own filter has a limit (Milvus: the length of its filter
    expression), or a mode registered from outside that implements ``mask`` this way.
    """
    depth = min(k, limit)
    while True:
        hits = search(query, depth)
        kept = [h for h in hits if mask.allow[row_of[h.chunk_id]]]
        if len(kept) >= k or len(hits) < depth or depth >= limit:
            return [dataclasses.replace(h, rank=i) for i, h in enumerate(kept[:k], 1)]
        depth = min(limit, depth * 4)


__all__ = [
    "NARROW",
    "RowMask",
    "deepened",
    "keep_rows",
    "mask_scores",
]

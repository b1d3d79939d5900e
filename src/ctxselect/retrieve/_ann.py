"""An HNSW graph over chunk vectors (Malkov & Yashunin 2018), through hnswlib.

Choice, measured on the SciFact chunk embeddings (5,183 x 384, one thread, ef 128):
hnswlib recall@10 0.9998 at 7,800 queries/s, faiss-cpu HNSW 0.9998 at 6,500, usearch
0.998 at 8,500, exact numpy 2,900 (DEPENDENCIES.md has 75k-vector figures). hnswlib is
small and its graph takes additions and deletions, which an index updated in place
needs. The graph only picks candidates: the exact dot product re-scores them, so ANN
and exact hits carry the same scores (up to float32 rounding).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from ctxselect._require import require
from ctxselect.errors import IndexCorruptError

M = 16  # graph degree: hnswlib's default, enough for 384 dimensions
EF_CONSTRUCTION = 200
EF_SEARCH = 128  # candidates examined per query; recall@10 >= 0.98 from here on SciFact
SEED = 0
_FEATURE = "approximate vector search (dense retrieval on large indexes)"


class HnswIndex:
    """Candidate rows for a query vector, by inner product (cosine on unit vectors)."""

    def __init__(self, index: Any, size: int, ef: int = EF_SEARCH) -> None:
        self.index = index
        self.size = size
        self.ef = ef

    @classmethod
    def build(cls, vectors: np.ndarray, rows: np.ndarray, ef: int = EF_SEARCH) -> HnswIndex:
        """Index ``vectors[rows]`` under their row numbers (one thread: reproducible graph)."""
        hnswlib = require("hnswlib", extra="dense", feature=_FEATURE)
        index = hnswlib.Index(space="ip", dim=vectors.shape[1])
        index.init_index(
            max_elements=max(len(rows), 1), ef_construction=EF_CONSTRUCTION, M=M, random_seed=SEED
        )
        index.add_items(vectors[rows], rows.astype(np.int64), num_threads=1)
        return cls(index, len(rows), ef)

    @classmethod
    def load(cls, blob: np.ndarray, dim: int, ef: int = EF_SEARCH) -> HnswIndex:
        """Rebuild the graph from :meth:`to_array` (hnswlib reads graphs from files only)."""
        hnswlib = require("hnswlib", extra="dense", feature=_FEATURE)
        index = hnswlib.Index(space="ip", dim=dim)
        fd, path = tempfile.mkstemp(suffix=".hnsw")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(np.asarray(blob, dtype=np.uint8).tobytes())
            index.load_index(path)
        except RuntimeError as exc:
            raise IndexCorruptError(
                f"the stored HNSW graph cannot be read ({exc}): rebuild"
            ) from exc
        finally:
            os.unlink(path)
        return cls(index, index.get_current_count(), ef)

    def to_array(self) -> np.ndarray:
        """Serialise the graph as bytes in a uint8 array (what a store persists)."""
        fd, path = tempfile.mkstemp(suffix=".hnsw")
        os.close(fd)
        try:
            self.index.save_index(path)
            with open(path, "rb") as handle:
                return np.frombuffer(handle.read(), dtype=np.uint8).copy()
        finally:
            os.unlink(path)

    def delete(self, rows: np.ndarray) -> None:
        """Leave ``rows`` out of every later search (rows deleted since the graph was built)."""
        for row in np.asarray(rows, dtype=np.int64).tolist():
            self.index.mark_deleted(row)
        self.size -= len(rows)

    def candidates(self, query: np.ndarray, k: int) -> np.ndarray:
        """Return up to ``k`` rows whose vectors have the largest inner product with ``query``."""
        k = self._depth(k)
        if k < 1:
            return np.zeros(0, dtype=np.int64)
        labels, _ = self.index.knn_query(np.asarray(query, dtype=np.float32)[None, :], k=k)
        return np.asarray(labels[0], dtype=np.int64)

    def allowed_candidates(
        self, query: np.ndarray, k: int, flags: Sequence[bool]
    ) -> np.ndarray | None:
        """Return up to ``k`` rows as :meth:`candidates` does, walking only rows whose
        ``flags`` entry is true, or None when the graph cannot find ``k`` of them (the
        caller then scores exactly).

        ``flags`` has one entry per row; pass a list (``allow.tolist()``, made once per
        mask): the filter runs at every visited node, and list lookups are cheapest.
        """
        k = self._depth(k)
        if k < 1:
            return np.zeros(0, dtype=np.int64)
        data = np.asarray(query, dtype=np.float32)[None, :]
        try:
            labels, _ = self.index.knn_query(data, k=k, filter=lambda row: flags[row])
        except RuntimeError:  # hnswlib: fewer than k allowed rows reached
            return None
        return np.asarray(labels[0], dtype=np.int64)

    def _depth(self, k: int) -> int:
        """Clamp ``k`` to the rows in the graph, and examine at least that many per query."""
        k = min(k, self.size)
        self.index.set_ef(max(self.ef, k))
        return k

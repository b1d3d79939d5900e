"""Dense retrieval: cosine similarity of unit-length embeddings, exact or through HNSW.

Exact search is one matrix-vector product over every chunk vector. Above
``ann_threshold`` chunks an HNSW graph (Malkov & Yashunin 2018, through hnswlib) picks
candidates and the exact product re-scores them, so an ANN hit carries the same score
as an exact one (up to float32 rounding). Chunks whose text is blank are never
embedded and never returned.

Modes that need an embedder register in :data:`EMBEDDING_MODES`, not in ``RETRIEVERS``:
an index build makes every ``RETRIEVERS`` mode from the chunk table alone, and these
cannot be made without a model (see docs/13-dense-hybrid.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ctxselect.config import DEFAULT_ANN_THRESHOLD
from ctxselect.errors import ConfigError, IndexCorruptError, IndexMismatchError, NotFoundError
from ctxselect.registry import Registry
from ctxselect.retrieve._ann import HnswIndex
from ctxselect.types import ChunkTable, Explanation, Hit

EMBEDDING_MODES: Registry[Any] = Registry("mode")
"""Modes whose ``build``/``load`` also take an ``embedder``: ``dense`` and ``hybrid``."""

REBUILD = "ctxselect index PATH... --index INDEX --embedder NAME"


class Encoder(Protocol):
    """What dense retrieval needs of an embedder (``ctxselect.embed.Embedder`` is one)."""

    name: str
    dim: int
    model_id: str

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return one unit-length float32 row per (non-blank) text."""
        ...


def check_k(k: int) -> None:
    """Raise ConfigError unless ``k`` is a whole number >= 1."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"k (number of hits) must be a whole number >= 1, got {k!r}")


def top_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Return the rows of the ``k`` highest finite scores, best first, ties by row."""
    finite = np.isfinite(scores)
    rows = finite.nonzero()[0] if not finite.all() else np.arange(len(scores))
    values = scores[rows]
    if len(rows) > k:
        kth = np.partition(values, len(values) - k)[len(values) - k]
        keep = (values >= kth).nonzero()[0]
        rows, values = rows[keep], values[keep]
    return rows[np.lexsort((rows, -values))][:k]


def _encode(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def _decode(blob: np.ndarray) -> str:
    return np.asarray(blob, dtype=np.uint8).tobytes().decode("utf-8")


@EMBEDDING_MODES.register("dense")
class DenseRetriever:
    """Ranks chunks by the cosine of their embedding with the query's.

    Scores are cosines in [-1, 1] (unlike keyword modes, a negative score is still a
    ranked chunk); chunks that were not embedded (blank text) are never returned.
    """

    mode = "dense"

    def __init__(
        self,
        table: ChunkTable,
        embedder: Encoder,
        vectors: np.ndarray,
        embedded: np.ndarray,
        ann: HnswIndex | None = None,
    ) -> None:
        """Wrap vectors already computed; use :meth:`build` or :meth:`load` instead."""
        self.table = table
        self.embedder = embedder
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.embedded = np.asarray(embedded, dtype=bool)
        self.ann = ann
        self._mask = np.where(self.embedded, 0.0, -np.inf).astype(np.float32)

    @classmethod
    def build(
        cls,
        table: ChunkTable,
        embedder: Encoder,
        vectors: np.ndarray | None = None,
        *,
        ann_threshold: int = DEFAULT_ANN_THRESHOLD,
    ) -> DenseRetriever:
        """Embed every non-blank chunk of ``table`` (or take ``vectors``) and index them.

        Args:
            table: The chunks; each is embedded as ``table.indexed_text(row)``.
            embedder: The model (wrap it in ``ctxselect.embed.CachedEmbedder`` to reuse
                vectors by content hash and show progress).
            vectors: Precomputed vectors, one row per table row (a store's cache);
                rows of blank chunks are ignored.
            ann_threshold: Build an HNSW graph when at least this many chunks are
                embedded; below it every search is exact.

        Raises:
            ConfigError: ``vectors`` has the wrong shape, or ``ann_threshold`` < 1.
        """
        if isinstance(ann_threshold, bool) or ann_threshold < 1:
            raise ConfigError(f"ann_threshold must be a whole number >= 1, got {ann_threshold}")
        n = len(table)
        embedded = np.array([bool(t) and not t.isspace() for t in table.texts], dtype=bool)
        rows = embedded.nonzero()[0]
        if vectors is None:
            vectors = np.zeros((n, embedder.dim), dtype=np.float32)
            if len(rows):
                texts = [table.indexed_text(int(r)) for r in rows]
                vectors[rows] = embedder.embed(texts)
        elif np.shape(vectors) != (n, embedder.dim):
            raise ConfigError(
                f"vectors have shape {np.shape(vectors)} but the table has {n} rows and the "
                f"embedder {embedder.name!r} makes {embedder.dim} dimensions"
            )
        vectors = np.where(embedded[:, None], vectors, 0.0).astype(np.float32)
        ann = HnswIndex.build(vectors, rows) if len(rows) >= ann_threshold else None
        return cls(table, embedder, vectors, embedded, ann)

    @classmethod
    def load(
        cls, table: ChunkTable, arrays: Mapping[str, np.ndarray], embedder: Encoder
    ) -> DenseRetriever:
        """Rebuild the retriever from :meth:`arrays`, checking the embedder is the same.

        Raises:
            IndexCorruptError: An array is missing or does not fit the others.
            IndexMismatchError: The index was embedded with another model, or covers a
                different number of chunks than ``table``.
        """
        missing = [name for name in ("vectors", "embedded", "model") if name not in arrays]
        if missing:
            raise IndexCorruptError(
                f"the dense index lacks the arrays {', '.join(missing)}: rebuild it with "
                f"`{REBUILD}`"
            )
        stored = _decode(arrays["model"])
        if stored != embedder.model_id:
            raise IndexMismatchError(
                f"the dense index was embedded with {stored!r} but the embedder asked for is "
                f"{embedder.model_id!r}: query with the same embedder, or rebuild with "
                f"`{REBUILD}`"
            )
        vectors = np.asarray(arrays["vectors"], dtype=np.float32)
        embedded = np.asarray(arrays["embedded"], dtype=bool)
        if len(vectors) != len(table) or len(embedded) != len(table):
            raise IndexMismatchError(
                f"the dense index covers {len(vectors)} chunks but the chunk table has "
                f"{len(table)}: rebuild it with `{REBUILD}`"
            )
        if vectors.ndim != 2 or vectors.shape[1] != embedder.dim:
            raise IndexCorruptError(
                f"the dense vectors have shape {vectors.shape}, not (chunks, {embedder.dim}): "
                f"rebuild it with `{REBUILD}`"
            )
        ann = HnswIndex.load(arrays["ann"], embedder.dim) if "ann" in arrays else None
        return cls(table, embedder, vectors, embedded, ann)

    def arrays(self) -> dict[str, np.ndarray]:
        """Vectors (float32), the embedded-row mask, the model id (UTF-8) and the graph."""
        out: dict[str, np.ndarray] = {
            "vectors": self.vectors,
            "embedded": self.embedded.astype(np.uint8),
            "model": _encode(self.embedder.model_id),
        }
        if self.ann is not None:
            out["ann"] = self.ann.to_array()
        return out

    # -- search ----------------------------------------------------------------------

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Embed ``queries`` (blank ones get a zero row); shape ``(len(queries), dim)``."""
        out = np.zeros((len(queries), self.embedder.dim), dtype=np.float32)
        rows = [i for i, q in enumerate(queries) if q and not q.isspace()]
        if rows:
            out[rows] = self.embedder.embed([queries[i] for i in rows], query=True)
        return out

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Return the cosine of every row with ``query_vector``; -inf for rows not embedded."""
        return self.vectors @ np.asarray(query_vector, dtype=np.float32) + self._mask

    def ranked(self, query_vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return the best ``k`` rows and their cosines for one embedded query."""
        if not np.any(query_vector):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.ann is not None and k < self.ann.size:
            rows = self.ann.candidates(query_vector, k)
            values = self.vectors[rows] @ np.asarray(query_vector, dtype=np.float32)
            order = np.lexsort((rows, -values))[:k]
            return rows[order], values[order]
        scores = self.scores(query_vector)
        rows = top_rows(scores, k)
        return rows, scores[rows]

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Return the ``k`` chunks closest to ``query``: best first, ties by chunk_id."""
        return self.search_many({"": query}, k)[""]

    def search_many(self, queries: Mapping[str, str], k: int = 10) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}``; the queries are embedded in one batch."""
        check_k(k)
        qids = list(queries)
        vectors = self.embed_queries([queries[q] for q in qids])
        out: dict[str, list[Hit]] = {}
        for qid, vector in zip(qids, vectors, strict=True):
            rows, values = self.ranked(vector, k)
            out[qid] = [
                self.table.hit(int(r), rank, float(v))
                for rank, (r, v) in enumerate(zip(rows, values, strict=True), 1)
            ]
        return out

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Give the cosine of ``chunk_id`` with ``query`` (a dense score has no terms)."""
        row = self.row(chunk_id)
        vector = self.embed_queries([query])[0]
        score = float(self.vectors[row] @ vector) if self.embedded[row] else 0.0
        note = (
            f"cosine similarity of {self.embedder.model_id} embeddings (unit length, so the "
            f"dot product); the chunk is embedded as its header and text"
        )
        if not self.embedded[row]:
            note = "the chunk's text is blank, so it was never embedded and is never returned"
        return Explanation(query, chunk_id, self.mode, score, (), note)

    def row(self, chunk_id: str) -> int:
        """Return the table row of ``chunk_id`` or raise NotFoundError."""
        row = self.table.row_of.get(chunk_id)
        if row is None:
            raise NotFoundError(
                f"chunk {chunk_id!r} is not in this index ({len(self.table)} chunks): use a "
                f"chunk_id returned by search"
            )
        return row

    def vectors_of(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """Return the stored vectors of ``chunk_ids`` (zero rows for blank chunks)."""
        return self.vectors[[self.row(c) for c in chunk_ids]]

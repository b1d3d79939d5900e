"""Dense retrieval: cosine similarity of unit-length embeddings, exact or through HNSW.

Exact search is one matrix-vector product over every chunk vector. Above
``ann_threshold`` chunks an HNSW graph (Malkov & Yashunin 2018, through hnswlib) picks
candidates and the exact product re-scores them, so an ANN hit carries the same score
as an exact one (bit for bit: :mod:`~ctxselect.retrieve.dense_scores`). Chunks whose
text is blank are never embedded and never returned.

Its row in ``retrieve.modes`` says it needs an embedder: an index build makes the keyword
modes from the chunk table alone, and this one cannot be made without a model (see
docs/13-dense-hybrid.md).

In a stored index, dense vectors live in segments like the keyword postings: a base
segment (``vectors``, ``embedded``, ``model`` and, above the threshold, the HNSW graph
``ann``) and one delta segment per update (``vectors``, ``embedded``). Before
compaction, :func:`load_segments` searches the base (through its graph, deleted rows
left out) and the deltas (exactly); compaction merges the vectors without embedding
anything again and rebuilds the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ctxselect.config import DEFAULT_ANN_THRESHOLD
from ctxselect.errors import ConfigError, IndexCorruptError, IndexMismatchError, NotFoundError
from ctxselect.retrieve._ann import HnswIndex
from ctxselect.retrieve.dense_scores import (
    ANN_SLACK,
    StackedVectors,
    best_first,
    candidates,
    exact_scores,
)
from ctxselect.retrieve.filters import NARROW, RowMask
from ctxselect.types import ChunkTable, Explanation, Hit, Rows

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


def encode_text(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode_text(blob: np.ndarray) -> str:
    return np.asarray(blob, dtype=np.uint8).tobytes().decode("utf-8")


@dataclass(frozen=True, slots=True, eq=False)
class MaskedRows:
    """What every search under one row mask needs, worked out once for all its queries.

    Attributes:
        mask: The mask (held: the next search under the same object reuses this).
        allowed: The embedded rows it allows, ascending.
        in_graph: How many of them the HNSW graph holds (rows before ``ann_rows``).
        tail: The allowed rows after the graph's (delta segments: searched exactly).
        flags: ``mask.allow`` as a list for the graph's filter, which reads it at every
            visited node (a list lookup is the cheapest); empty when the graph is not
            walked (no graph, or a narrow mask).
    """

    mask: RowMask
    allowed: np.ndarray
    in_graph: int
    tail: np.ndarray
    flags: list[bool]


class DenseRetriever:
    """Ranks chunks by the cosine of their embedding with the query's.

    Scores are cosines in [-1, 1] (unlike keyword modes, a negative score is still a
    ranked chunk); chunks that were not embedded (blank text) are never returned.
    """

    mode = "dense"

    def __init__(
        self,
        table: Rows,
        embedder: Encoder,
        vectors: np.ndarray | StackedVectors,
        embedded: np.ndarray,
        ann: HnswIndex | None = None,
        ann_rows: int | None = None,
    ) -> None:
        """Wrap vectors already computed; use :meth:`build`, :meth:`load` or
        :func:`load_segments` instead.

        ``ann`` covers the first ``ann_rows`` rows (default: all); later rows (delta
        segments) are searched exactly.
        """
        self.table = table
        self.embedder = embedder
        self.vectors: Any = (
            vectors
            if isinstance(vectors, StackedVectors)
            else np.ascontiguousarray(vectors, dtype=np.float32)
        )
        self.embedded = np.asarray(embedded, dtype=bool)
        self.ann = ann
        self.ann_rows = len(self.embedded) if ann_rows is None else ann_rows
        self._mask = np.where(self.embedded, 0.0, -np.inf).astype(np.float32)
        self._tail: Any = None  # rows after ann_rows, searched exactly next to the graph
        # Delta rows follow the base's, so row order is not chunk_id order: ties need ids
        # (None: rows are in chunk_id order and ties break on row).
        self.tie_ids: Sequence[str] | None = (
            table.chunk_ids if self.ann_rows < len(self.embedded) else None
        )
        if self.ann_rows < len(self.embedded):
            stacked = self.vectors
            if isinstance(stacked, StackedVectors) and self.ann_rows == int(stacked.starts[1]):
                self._tail = StackedVectors(stacked.parts[1:])
            else:
                self._tail = self.vectors[np.arange(self.ann_rows, len(self.embedded))]
        self._masked: MaskedRows | None = None  # the last mask searched under

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
        return cls(table, embedder, vectors, embedded, graph_of(vectors, embedded, ann_threshold))

    @classmethod
    def load(
        cls, table: Rows, arrays: Mapping[str, np.ndarray], embedder: Encoder
    ) -> DenseRetriever:
        """Rebuild the retriever from :meth:`arrays`, checking the embedder is the same.

        Raises:
            IndexCorruptError: An array is missing or does not fit the others.
            IndexMismatchError: The index was embedded with another model, or covers a
                different number of chunks than ``table``.
        """
        check_model(arrays, embedder)
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
            "vectors": (
                self.vectors
                if isinstance(self.vectors, np.ndarray)
                else self.vectors[np.arange(len(self.embedded))]
            ),
            "embedded": self.embedded.astype(np.uint8),
            "model": encode_text(self.embedder.model_id),
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

    def ranked(
        self, query_vector: np.ndarray, k: int, mask: RowMask | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return the best ``k`` rows and their cosines for one embedded query (of the
        rows ``mask`` allows: through the graph when many are, else exactly)."""
        if not np.any(query_vector):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        query = np.asarray(query_vector, dtype=np.float32)
        if mask is not None:
            rows = self._masked_candidates(query, k, self._rows_of(mask))
        elif self.ann is not None and k < self.ann.size:
            rows = self.ann.candidates(query, min(k + ANN_SLACK, self.ann.size))
            if self._tail is not None:  # rows added since the graph: exact
                tail = self._tail @ query + self._mask[self.ann_rows :]
                rows = np.concatenate([rows, candidates(tail, k) + self.ann_rows])
        else:
            rows = candidates(self.scores(query), k)
        values = exact_scores(self.vectors, rows, query)
        order = best_first(rows, values, self.tie_ids)[:k]
        return rows[order], values[order]

    def _rows_of(self, mask: RowMask) -> MaskedRows:
        """What searches under ``mask`` share: kept for the next search, so the queries
        of a batch (``search_many``, hybrid's dense side) work it out once, not each."""
        kept = self._masked  # read once: another thread may replace it meanwhile
        if kept is not None and kept.mask is mask:
            return kept
        mask.check(len(self.embedded))
        allowed = mask.rows[self.embedded[mask.rows]]
        walks = self.ann is not None and mask.share >= NARROW
        kept = MaskedRows(
            mask=mask,
            allowed=allowed,
            in_graph=int((allowed < self.ann_rows).sum()),
            tail=allowed[allowed >= self.ann_rows],
            flags=mask.allow.tolist() if walks else [],
        )
        self._masked = kept
        return kept

    def _masked_candidates(self, query: np.ndarray, k: int, masked: MaskedRows) -> np.ndarray:
        """Candidate rows among those a mask allows: the graph walks allowed rows when
        they are many; a narrow filter (or a graph that finds too few) scores every
        allowed row exactly, so a filtered search never returns fewer hits than exist."""
        allowed = masked.allowed
        wide = masked.mask.share >= NARROW
        if self.ann is not None and wide and k + ANN_SLACK < len(allowed):
            found = self.ann.allowed_candidates(query, k + ANN_SLACK, masked.flags)
            if found is not None and len(found) >= min(k, masked.in_graph):
                if self._tail is None:
                    return found
                values = exact_scores(self.vectors, masked.tail, query)
                return np.concatenate([found, masked.tail[candidates(values, k)]])
        values = exact_scores(self.vectors, allowed, query)
        return allowed[candidates(values, k)]

    def search(self, query: str, k: int = 10, *, mask: RowMask | None = None) -> list[Hit]:
        """Return the ``k`` chunks closest to ``query``: best first, ties by chunk_id; only
        rows ``mask`` allows (default: all)."""
        return self.search_many({"": query}, k, mask=mask)[""]

    def search_many(
        self, queries: Mapping[str, str], k: int = 10, *, mask: RowMask | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}``; the queries are embedded in one batch."""
        check_k(k)
        qids = list(queries)
        vectors = self.embed_queries([queries[q] for q in qids])
        out: dict[str, list[Hit]] = {}
        for qid, vector in zip(qids, vectors, strict=True):
            rows, values = self.ranked(vector, k, mask)
            out[qid] = [
                self.table.hit(int(r), rank, float(v))
                for rank, (r, v) in enumerate(zip(rows, values, strict=True), 1)
            ]
        return out

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Give the cosine of ``chunk_id`` with ``query`` (a dense score has no terms)."""
        row = self.row(chunk_id)
        vector = self.embed_queries([query])[0]
        score = float(exact_scores(self.vectors, np.array([row]), vector)[0])
        score = score if self.embedded[row] else 0.0
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


def check_model(arrays: Mapping[str, np.ndarray], embedder: Encoder) -> None:
    """Raise unless ``arrays`` hold a dense index embedded with ``embedder``'s model.

    Raises:
        IndexCorruptError: An array is missing.
        IndexMismatchError: The index was embedded with another model; the message
            names both and the rebuild command.
    """
    missing = [name for name in ("vectors", "embedded", "model") if name not in arrays]
    if missing:
        raise IndexCorruptError(
            f"the dense index lacks the arrays {', '.join(missing)}: rebuild it with `{REBUILD}`"
        )
    stored = decode_text(arrays["model"])
    if stored != embedder.model_id:
        raise IndexMismatchError(
            f"the dense index was embedded with {stored!r} but the embedder asked for is "
            f"{embedder.model_id!r}: query with the same embedder, or rebuild with `{REBUILD}`"
        )


def graph_of(vectors: np.ndarray, embedded: np.ndarray, ann_threshold: int) -> HnswIndex | None:
    """The HNSW graph of the embedded rows, or None below ``ann_threshold`` of them."""
    rows = np.flatnonzero(embedded)
    return HnswIndex.build(vectors, rows) if len(rows) >= ann_threshold else None

"""Hybrid retrieval: a keyword ranking and a dense ranking fused by a :class:`FuseSpec`.

Each side ranks ``spec.depth`` chunks; :func:`ctxselect.retrieve.fuse.fuse` merges them.
The spec is best chosen per corpus on labeled queries (``ctxselect.api.tune``): equal-weight
fusion can lose to the better single retriever.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.config import DEFAULT_ANN_THRESHOLD, FuseSpec
from ctxselect.errors import ConfigError, IndexCorruptError
from ctxselect.retrieve.base import Retriever, RetrieverClass
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.dense import (
    DenseRetriever,
    Encoder,
    check_k,
    exact_scores,
)
from ctxselect.retrieve.filters import RowMask
from ctxselect.retrieve.fuse import FUSIONS, NORMS, Pool, fuse_pool, pool
from ctxselect.types import ChunkTable, Explanation, Hit

KEYWORD_LOOKUP = 10_000
"""How deep the keyword side is searched to score a pool (at least the pool depth).

Convex fusion normalises both sides' scores over the pool, so the keyword score of a
chunk only the dense side found should be its real one: measured on SciFact, scoring
such chunks with the keyword list's last score instead cost 0.005-0.007 nDCG@10."""

DENSE = DenseRetriever.mode
"""The dense side's mode: its arrays are prefixed ``dense/``."""


def _constant(value: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda keys: np.full(len(keys), value)


def _dot(vectors: Any, query: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda keys: exact_scores(vectors, keys, query)


def _rank(rank: int) -> str:
    return f"rank {rank}" if rank else "outside its list"


class HybridRetriever:
    """Fuses a keyword retriever (``bm25`` by default) with a :class:`DenseRetriever`."""

    mode = "hybrid"

    def __init__(self, keyword: Retriever, dense: DenseRetriever, spec: FuseSpec | None = None):
        """Combine two retrievers over the same chunk table.

        Raises:
            ConfigError: The retrievers rank different tables.
            UnknownNameError: The spec names an unknown method or normalisation.
        """
        spec = spec or FuseSpec()
        FUSIONS.check(spec.method)
        NORMS.check(spec.norm)
        table = getattr(keyword, "table", None)
        if table is not None and len(table) != len(dense.table):
            raise ConfigError(
                f"the keyword retriever ranks {len(table)} chunks and the dense one "
                f"{len(dense.table)}: build both over the same chunk table"
            )
        self.keyword = keyword
        self.dense = dense
        self.spec = spec
        self.table = dense.table

    @classmethod
    def build(
        cls,
        table: ChunkTable,
        embedder: Encoder,
        spec: FuseSpec | None = None,
        *,
        keyword: RetrieverClass = BM25Retriever,
        vectors: np.ndarray | None = None,
        ann_threshold: int = DEFAULT_ANN_THRESHOLD,
        **keyword_params: Any,
    ) -> HybridRetriever:
        """Build the keyword mode ``keyword`` and dense retrieval over ``table``.

        Args:
            table: The chunks.
            embedder: The dense model (see :meth:`DenseRetriever.build`).
            spec: How to fuse (default ``FuseSpec()``: RRF, k = 60, equal weights).
            keyword: The keyword mode's retriever class (``BM25Retriever`` ...).
            vectors: Precomputed chunk vectors, one row per table row.
            ann_threshold: See :meth:`DenseRetriever.build`.
            **keyword_params: Passed to the keyword mode's ``build`` (e.g. ``k1``).
        """
        sparse = keyword.build(table, **keyword_params)
        dense = DenseRetriever.build(table, embedder, vectors, ann_threshold=ann_threshold)
        return cls(sparse, dense, spec)

    @classmethod
    def load(
        cls,
        table: ChunkTable,
        arrays: Mapping[str, np.ndarray],
        embedder: Encoder,
        spec: FuseSpec | None = None,
        *,
        keyword: RetrieverClass = BM25Retriever,
        **keyword_params: Any,
    ) -> HybridRetriever:
        """Rebuild from :meth:`arrays`: ``<keyword mode>/<name>`` and ``dense/<name>``,
        the keyword side with ``keyword`` (the class whose arrays they are)."""
        modes = {name.split("/", 1)[0] for name in arrays if "/" in name} - {DENSE}
        if modes != {keyword.mode}:
            raise IndexCorruptError(
                f"the hybrid index should hold the arrays of {keyword.mode} and dense, found "
                f"{sorted(modes) or 'none'} beside dense: rebuild the index"
            )
        parts = {
            m: {n.split("/", 1)[1]: a for n, a in arrays.items() if n.startswith(f"{m}/")}
            for m in (keyword.mode, DENSE)
        }
        sparse = keyword.load(table, parts[keyword.mode], **keyword_params)
        return cls(sparse, DenseRetriever.load(table, parts[DENSE], embedder), spec)

    def arrays(self) -> dict[str, np.ndarray]:
        """Both sides' arrays, prefixed ``<keyword mode>/`` and ``dense/``."""
        out = {f"{self.keyword.mode}/{n}": a for n, a in self.keyword.arrays().items()}
        out.update({f"{DENSE}/{n}": a for n, a in self.dense.arrays().items()})
        return out

    def with_spec(self, spec: FuseSpec) -> HybridRetriever:
        """Return the same retrievers fused with ``spec`` (nothing is rebuilt)."""
        return HybridRetriever(self.keyword, self.dense, spec)

    # -- search ----------------------------------------------------------------------

    def pools(
        self, queries: Mapping[str, str], depth: int, mask: RowMask | None = None
    ) -> dict[str, Pool]:
        """Return each query's pool: both sides' top ``depth`` chunks, scored on both sides.

        Dense scores of every pooled chunk are exact (one dot product each). The keyword
        side is searched ``KEYWORD_LOOKUP`` chunks deep, so the keyword scores of chunks
        only the dense side found are known too; a chunk deeper still gets the last
        score found (0 when the keyword list ran out: the chunk shares no term with the
        query). Tuning fuses these pools many times. With ``mask``, both sides rank only
        the rows it allows, so the pool (and the fusion) holds allowed chunks only.
        """
        check_k(depth)
        lookup = max(depth, KEYWORD_LOOKUP)
        vectors = self.dense.embed_queries([queries[q] for q in queries])
        out: dict[str, Pool] = {}
        for qid, vector in zip(queries, vectors, strict=True):
            rows, values = self.dense.ranked(vector, depth, mask)
            ranked = self._keyword_ranked(queries[qid], lookup, mask)
            floor = ranked[-1][1] if len(ranked) == lookup else 0.0
            out[qid] = pool(
                ranked,
                list(zip(rows.tolist(), values.tolist(), strict=True)),
                depth,
                keyword_score=_constant(floor),
                dense_score=_dot(self.dense.vectors, vector),
            )
        return out

    def _keyword_ranked(
        self, query: str, k: int, mask: RowMask | None = None
    ) -> list[tuple[int, float]]:
        """The keyword side's ``(row, score)`` list; rows and scores alone where the
        retriever gives them (making thousands of Hits per query costs milliseconds)."""
        ranked = getattr(self.keyword, "ranked", None)
        if ranked is not None:
            rows, scores = ranked(query, k) if mask is None else ranked(query, k, mask)
            return list(zip(rows, scores, strict=True))
        row_of = self.table.row_of
        hits = self.keyword.search(query, k, mask=mask)
        return [(row_of[h.chunk_id], h.score) for h in hits]

    def fuse_pool(self, items: Pool, k: int, spec: FuseSpec | None = None) -> list[Hit]:
        """Fuse one query's pool with ``spec`` (default: this retriever's) into hits."""
        ids = self.dense.tie_ids  # rows out of chunk_id order (a stored index's deltas)
        fused = fuse_pool(items, spec or self.spec, None if ids is not None else k)
        if ids is not None:  # ties break on chunk_id, as in a rebuild
            fused = sorted(fused, key=lambda rs: (-rs[1], ids[rs[0]]))[:k]
        return [self.table.hit(row, rank, score) for rank, (row, score) in enumerate(fused, 1)]

    def search(self, query: str, k: int = 10, *, mask: RowMask | None = None) -> list[Hit]:
        """Return the ``k`` best chunks for ``query`` after fusion: best first, ties by
        chunk_id; only rows ``mask`` allows (default: all)."""
        return self.search_many({"": query}, k, mask=mask)[""]

    def search_many(
        self, queries: Mapping[str, str], k: int = 10, *, mask: RowMask | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}``; the dense side embeds all queries in one batch.

        At most ``2 * spec.depth`` chunks are ranked (the pool), so ``k`` above that
        returns fewer hits.
        """
        check_k(k)
        found = self.pools(queries, self.spec.depth, mask)
        return {qid: self.fuse_pool(found[qid], k) for qid in queries}

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Give the fused score of ``chunk_id`` with each side's rank and score.

        The terms are the keyword side's explanation; the note gives both ranks.
        """
        row = self.dense.row(chunk_id)
        spec = self.spec
        items = self.pools({"": query}, spec.depth)[""]
        fused = dict(fuse_pool(items, spec))
        terms = self.keyword.explain(query, chunk_id).terms
        where = np.flatnonzero(items.keys == row)
        if not len(where):
            note = f"{spec.label()}: not in the top {spec.depth} of either side, so not ranked"
            return Explanation(query, chunk_id, self.mode, 0.0, terms, note)
        i = int(where[0])
        parts = [
            f"{side} ({mode}): {_rank(int(ranks[i]))}, score {float(scores[i]):.4f}"
            for side, mode, ranks, scores in (
                ("keyword", self.keyword.mode, items.keyword_rank, items.keyword),
                (DENSE, self.dense.mode, items.dense_rank, items.dense),
            )
        ]
        note = f"{spec.label()} over the top {spec.depth} of each side; " + "; ".join(parts)
        return Explanation(query, chunk_id, self.mode, fused[row], terms, note)

    def vectors_of(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """Return the dense vectors of ``chunk_ids`` (for MMR)."""
        return self.dense.vectors_of(chunk_ids)

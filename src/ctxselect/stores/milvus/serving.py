"""Server-side ranking: ``bm25``, ``dense`` and ``hybrid`` answered by Milvus.

The chunk collection feeds ``body`` (header, newline, text) to a BM25 function whose
sparse output is indexed with the k1 and b of ``client.DEFAULT_BM25``; a search is one
``search`` call filtered to the rows a generation sees (``born <= G``, minus the rows
tombstoned by G). The store serves ``bm25`` only when the index's BM25 settings equal the
collection's, with no analysis option Milvus lacks (otherwise the client-side retriever
loads from the segments as before),
and never when ``CTXSELECT_MILVUS_SERVE`` says otherwise (``none``, or a list of modes).

Where Milvus's BM25 differs from ours (docs/14-milvus.md):

- Analysis: Milvus's ``standard`` tokenizer (Unicode word boundaries; keeps one-letter
  words) instead of bm25s's ``\\w\\w+``; the same Snowball English stemmer and stop list.
- Statistics: N, document frequencies and the average length are taken over every row
  the collection holds, which includes versions kept for older generations and rows of
  a write in progress; ours count the live rows only. After a full build with no later
  change they are the same rows.
- IDF and scoring: Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))`` and saturation in
  both, Milvus in float32; its average length comes from its own statistics. Milvus
  multiplies by the constant ``(k1 + 1)`` that ours (Lucene >= 8) leaves out: served
  scores are divided by it (with the same tokens and statistics they equal ours).
- ``explain`` gives the server's score of the chunk without a per-term breakdown.

``dense`` searches the collection ``NAME__denseDIM`` (the new chunks' vectors are copied
there by every commit) with an exact FLAT index on inner product, so its top-k equals the
client-side exact search up to float32 ties.

``hybrid`` is one ``hybrid_search`` of that collection (it also holds each embedded
chunk's ``body`` and BM25 field: Milvus fuses searches of one collection only) with
``RRFRanker(k)``, served only when the index's fusion is plain RRF: equal weights and a
whole k (Cormack et al. 2009, as ours). Milvus 2.5's ``WeightedRanker`` weighs
arctan-normalised scores, so neither our weighted RRF nor convex fusion over minmax or
zscore pools exists there: those stay client-side. Each side contributes its top
``depth`` as in ours; ties are broken on chunk_id after the server's fusion. The BM25
side's statistics are those of the vector collection's rows (embedded chunks only).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.config import FuseSpec
from ctxselect.errors import ConfigError, NotFoundError
from ctxselect.manifest import Manifest
from ctxselect.retrieve.filters import RowMask, deepened
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus.lazy import MilvusLazyRows
from ctxselect.stores.milvus.servable import (
    check_rows,
    has_vectors,
    plain_rrf,
    same_bm25,
    searching,
    vectors_shape,
)
from ctxselect.types import Explanation, Hit

SERVE_ENV = "CTXSELECT_MILVUS_SERVE"
SERVABLE = ("bm25", "dense", "hybrid")
_NOT_IN_MAX = 5000  # dead ids put in the filter; above, the search fetches more and drops


def served_modes(store: Any, snapshot: Snapshot) -> tuple[str, ...]:
    """The modes ``store`` ranks itself for ``snapshot`` (see the module docstring)."""
    wanted = os.environ.get(SERVE_ENV, ",".join(SERVABLE)).lower()
    asked = {m.strip() for m in wanted.split(",") if m.strip()}
    modes = [m for m in SERVABLE if m in asked and (m in snapshot.segments or m == "hybrid")]
    if "bm25" in modes and not same_bm25(store.layout.get("bm25"), snapshot.manifest):
        modes.remove("bm25")
    if "dense" in modes and not has_vectors(store, snapshot):
        modes.remove("dense")
    if "hybrid" in modes and not _hybrid_servable(store, snapshot, modes):
        modes.remove("hybrid")
    return tuple(modes)


def _hybrid_servable(store: Any, snapshot: Snapshot, modes: Sequence[str]) -> bool:
    """True when Milvus can fuse exactly as the index does: both parts served, the vector
    collection holds the BM25 field, the fusion is plain RRF with a whole k, and the dead
    rows fit the search filter (fusing before dropping them would shift ranks)."""
    if "bm25" not in modes or "dense" not in modes:
        return False
    fusion = Manifest.from_dict(snapshot.manifest).fusion or FuseSpec()
    if not plain_rrf(fusion):
        return False
    shape = vectors_shape(snapshot)
    if shape is None or "sparse" not in store.dense_fields(ms.dense_name(store.address, shape[1])):
        return False
    return len(store.tombs(snapshot.generation, "chunk")) <= _NOT_IN_MAX


class _Searcher:
    """A Retriever whose scores come from a Milvus search (one generation of one store).

    Args:
        store: The MilvusStore.
        snapshot: The generation to search: its rows make the hits.
    """

    mode = ""
    metric = ""
    field = ""
    factor = 1.0
    """What the server's scores are multiplied by to be on our scale."""

    def __init__(self, store: Any, snapshot: Snapshot) -> None:
        self.store = store
        self.snapshot = snapshot
        self.table = snapshot.rows
        self.collection = store.address.name
        generation = snapshot.generation
        self._dead = sorted(store.tombs(generation, "chunk"))
        self._filter = f"born <= {generation}"
        if 0 < len(self._dead) <= _NOT_IN_MAX:
            self._filter += f" and id not in {mc.ints(self._dead)}"

    def queries(self, texts: list[str]) -> list[Any]:
        """What the server searches with for each query text."""
        return list(texts)

    def _search(self, data: list[Any], limit: int, expr: str) -> list[Any]:
        return list(
            self.store._client.search(
                self.collection,
                data=data,
                anns_field=self.field,
                limit=limit,
                filter=expr,
                search_params={"metric_type": self.metric},
                output_fields=self._fields(),
            )
        )

    def search(self, query: str, k: int = 10, *, mask: RowMask | None = None) -> list[Hit]:
        """Return the ``k`` best hits: best first, ties by chunk_id; only rows ``mask``
        allows (default: all)."""
        return self.search_many({"": query}, k, mask=mask)[""]

    @searching
    def search_many(
        self, queries: Mapping[str, str], k: int = 10, *, mask: RowMask | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}`` (one server search for all queries).

        ``mask`` (a filter's rows) becomes part of the server's filter expression (the
        ids it allows or those it blocks, the shorter list), so the server ranks allowed
        rows only; a mask that allows and blocks more than ``_NOT_IN_MAX`` rows each
        would make that expression too long, so the search goes deeper until ``k``
        allowed hits are found or the ranking runs out.
        """
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ConfigError(f"k (number of hits) must be a whole number >= 1, got {k!r}")
        qids = [q for q in queries if queries[q].strip()]
        out: dict[str, list[Hit]] = {q: [] for q in queries}
        if not qids or (mask is not None and not len(mask.rows)):
            return out
        expr = self._filter
        if mask is not None:
            clause = self._mask_clause(mask)
            if clause is None:
                row_of = self.table.row_of
                for q in qids:
                    out[q] = deepened(self.search, queries[q], int(k), mask, row_of, mc.QUERY_MAX)
                return out
            expr += clause
        extra = len(self._dead) if len(self._dead) > _NOT_IN_MAX else 0
        limit = self.limit(int(k) + extra)
        found = self._search(self.queries([queries[q] for q in qids]), limit, expr)
        dead = set(self._dead) if extra else set()
        for qid, hits in zip(qids, found, strict=True):
            scored = [
                (self.factor * h["distance"], h["entity"]["chunk_id"], int(h["id"]), h["entity"])
                for h in hits
                if h["id"] not in dead and self.keep(float(h["distance"]))
            ]
            scored.sort(key=lambda found: (-found[0], found[1]))
            out[qid] = self._hits(scored[:k])
        if mask is None and not any(out.values()):
            check_rows(self.store, self.snapshot, self._filter)
        return out

    def _mask_clause(self, mask: RowMask) -> str | None:
        """The server filter that keeps ``mask``'s rows: the ids it allows or the ids it
        blocks, whichever list is shorter; None when both are over ``_NOT_IN_MAX``."""
        rowids = np.asarray(self.snapshot.rowids)
        if len(mask.rows) <= _NOT_IN_MAX:
            return f" and id in {mc.ints(rowids[mask.rows])}"
        blocked = np.flatnonzero(~mask.allow)
        if len(blocked) <= _NOT_IN_MAX:
            return f" and id not in {mc.ints(rowids[blocked])}" if len(blocked) else ""
        return None

    def _fields(self) -> list[str]:
        """What a search returns of each hit: the whole chunk row when rows are read per
        hit and the chunk collection is searched (one round trip, not two)."""
        lazy = isinstance(self.table, MilvusLazyRows)
        return (
            ms.CHUNK_FIELDS if lazy and self.collection == self.store.address.name else ["chunk_id"]
        )

    def _hits(self, scored: list[tuple[float, str, int, dict]]) -> list[Hit]:
        """Hits of (score, chunk_id, row id, returned fields), best first: from the
        snapshot's table, or (rows read per hit) from the returned rows, else one query."""
        table = self.table
        if isinstance(table, MilvusLazyRows) and scored:
            by_id = {rid: row for _, _, rid, row in scored if "body" in row}
            missing = [rid for _, _, rid, _ in scored if rid not in by_id]
            if missing:
                where = f"id in {mc.ints(missing)}"
                rows = self.store.chunk_rows(self.snapshot.generation, where, live=False)
                by_id.update((int(r["id"]), r) for r in rows)
            return [
                table.hit_of(by_id[rid], rank, score)
                for rank, (score, _, rid, _) in enumerate(scored, 1)
                if rid in by_id
            ]
        rows_of = table.row_of
        return [
            table.hit(rows_of[cid], rank, score)
            for rank, (score, cid, _, _) in enumerate(scored, 1)
            if cid in rows_of
        ]

    def limit(self, k: int) -> int:
        """How many hits to ask the server for, to return ``k`` with ties cut right."""
        return min(mc.QUERY_MAX, k + 1)  # one more: a tie at the cut

    def keep(self, score: float) -> bool:
        """Whether a hit with ``score`` is returned (a BM25 score of 0 matches nothing)."""
        return score > 0

    note = ""

    @searching
    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Give the server's score of ``chunk_id`` (no per-term breakdown)."""
        if chunk_id not in self.table.row_of:
            raise NotFoundError(
                f"chunk {chunk_id!r} is not in this index: use a chunk_id returned by search"
            )
        expr = f"{self._filter} and id in {mc.ints(self._ids_of(chunk_id))}"
        found = self._search(self.queries([query]), 1, expr) if query.strip() else [[]]
        found_id = [h for h in found[0] if h["entity"]["chunk_id"] == chunk_id]
        scores = [self.factor * h["distance"] for h in found_id]
        return Explanation(query, chunk_id, self.mode, scores[0] if scores else 0.0, (), self.note)

    def _ids_of(self, chunk_id: str) -> list[int]:
        row = self.table.row_of.get(chunk_id)
        if row is None:
            raise NotFoundError(
                f"chunk {chunk_id!r} is not in this index: use a chunk_id returned by search"
            )
        return [int(self.snapshot.rowids[row])]

    def arrays(self) -> dict[str, np.ndarray]:
        """Nothing: the server holds this mode's index."""
        return {}


class MilvusBM25Searcher(_Searcher):
    """``bm25`` answered by the BM25 function of the chunk collection."""

    mode = "bm25"
    metric = "BM25"
    field = "sparse"
    note = (
        "scored by Milvus's BM25 function on the server (analyzer: standard tokenizer, "
        "English stems and stop words; statistics over every stored row); it gives no "
        "per-term breakdown: set CTXSELECT_MILVUS_SERVE=none for ours"
    )

    def __init__(self, store: Any, snapshot: Snapshot) -> None:
        super().__init__(store, snapshot)
        # Milvus scores idf * tf * (k1 + 1) / (tf + ...); ours (Lucene >= 8) leave out the
        # constant (k1 + 1): dividing puts served scores on our scale (calibration, tune)
        self.factor = 1.0 / (1.0 + float((store.layout.get("bm25") or ms.DEFAULT_BM25)["k1"]))


class MilvusDenseSearcher(_Searcher):
    """``dense`` answered by an exact (FLAT) inner-product search of the chunk vectors.

    Args:
        store: The MilvusStore.
        snapshot: The generation to search.
        embedder: The index's query embedder (``ModeContext.embedder``).
    """

    mode = "dense"
    metric = "IP"
    field = "vector"
    note = (
        "cosine similarity (inner product of unit vectors) computed by Milvus on the "
        "server, exact (FLAT index); a dense score has no terms"
    )

    def __init__(self, store: Any, snapshot: Snapshot, embedder: Any) -> None:
        super().__init__(store, snapshot)
        self.embedder = embedder
        self.collection = ms.dense_name(store.address, embedder.dim)

    def queries(self, texts: list[str]) -> list[Any]:
        """The query vectors, embedded in one batch."""
        vectors = np.asarray(self.embedder.embed(texts, query=True), dtype=np.float32)
        return [v.tolist() for v in vectors]

    def keep(self, score: float) -> bool:
        """Every embedded chunk has a cosine (only embedded chunks have vectors)."""
        return True

    @searching
    def vectors_of(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """Return the stored vectors of ``chunk_ids`` (zero rows for blank chunks), as
        MMR asks a dense retriever."""
        ids = [self._ids_of(c)[0] for c in chunk_ids]
        out = np.zeros((len(ids), int(self.embedder.dim)), dtype=np.float32)
        found: dict[int, list[float]] = {}
        for part in mc.batches(sorted(set(ids))):
            rows = self.store._client.query(
                self.collection, filter=f"id in {mc.ints(part)}", output_fields=["vector"]
            )
            found.update((int(r["id"]), r["vector"]) for r in rows)
        for i, ident in enumerate(ids):
            if ident in found:
                out[i] = found[ident]
        return out


class MilvusHybridSearcher(MilvusDenseSearcher):
    """``hybrid`` answered by one ``hybrid_search`` (BM25 and vectors, ``RRFRanker``).

    Args:
        store: The MilvusStore.
        snapshot: The generation to search.
        embedder: The index's query embedder.
        fusion: The index's fusion; plain RRF (see :func:`plain_rrf`).
    """

    mode = "hybrid"

    def __init__(self, store: Any, snapshot: Snapshot, embedder: Any, fusion: FuseSpec) -> None:
        super().__init__(store, snapshot, embedder)
        if not plain_rrf(fusion):
            raise ConfigError(
                f"index {store.uri}: Milvus cannot fuse {fusion.label()} (only RRF with equal "
                f"weights and a whole k): rank hybrid client-side "
                f"(CTXSELECT_MILVUS_SERVE=bm25,dense)"
            )
        self.fusion = fusion
        self.note = (
            f"fused by Milvus on the server: RRF k={fusion.k:g} over the top {fusion.depth} "
            f"of its BM25 and exact dense searches; no per-side breakdown"
        )

    def queries(self, texts: list[str]) -> list[Any]:
        """Each query's text (BM25 side) and vector (dense side)."""
        return list(zip(texts, super().queries(texts), strict=True))

    def limit(self, k: int) -> int:
        """The whole pool (both sides' top ``depth``), so ties at the cut break on chunk_id."""
        return min(mc.QUERY_MAX, max(k, 2 * self.fusion.depth))

    @searching
    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Give the server's fused score of ``chunk_id`` (0 outside both sides' top depth)."""
        self._ids_of(chunk_id)
        hits = self.search_many({"": query}, self.limit(1))[""] if query.strip() else []
        scores = [h.score for h in hits if h.chunk_id == chunk_id]
        note = self.note if scores else f"{self.note}; not in either side's top, so not ranked"
        return Explanation(query, chunk_id, self.mode, scores[0] if scores else 0.0, (), note)

    def _search(self, data: list[Any], limit: int, expr: str) -> list[Any]:
        """One ``hybrid_search`` per query: Milvus Lite 2.5.1 ranks RRF across every query
        of a batched call (scores of about 1 / (k + 5000) came back), so none is batched."""
        from pymilvus import AnnSearchRequest, RRFRanker

        depth = min(mc.QUERY_MAX, self.fusion.depth)
        ranker = RRFRanker(int(self.fusion.k))
        out = []
        for text, vector in data:
            requests = [
                AnnSearchRequest([text], "sparse", {"metric_type": "BM25"}, depth, expr=expr),
                AnnSearchRequest([vector], "vector", {"metric_type": "IP"}, depth, expr=expr),
            ]
            found = self.store._client.hybrid_search(
                self.collection, requests, ranker, limit=limit, output_fields=["chunk_id"]
            )
            out.append(found[0])
        return out

"""Server-side ranking: ``bm25`` and ``dense`` answered by Milvus, not client arrays.

The chunk collection feeds ``body`` (header, newline, text) to a BM25 function whose
sparse output is indexed with the k1 and b of ``client.DEFAULT_BM25``; a search is one
``search`` call filtered to the rows a generation sees (``born <= G``, minus the rows
tombstoned by G). The store serves ``bm25`` only when the index's BM25 settings equal the
collection's (otherwise the client-side retriever loads from the segments as before),
and never when ``CTXSELECT_MILVUS_SERVE`` says otherwise (``none``, or a list of modes).

Where Milvus's BM25 differs from ours (docs/14-milvus.md):

- Analysis: Milvus's ``standard`` tokenizer (Unicode word boundaries; keeps one-letter
  words) instead of bm25s's ``\\w\\w+``; the same Snowball English stemmer and stop list.
- Statistics: N, document frequencies and the average length are taken over every row
  the collection holds, which includes versions kept for older generations and rows of
  a write in progress; ours count the live rows only. After a full build with no later
  change they are the same rows.
- IDF and scoring: Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))`` and saturation in
  both, Milvus in float32; its average length comes from its own statistics.
- ``explain`` gives the server's score of the chunk without a per-term breakdown.

``dense`` searches the collection ``NAME__denseDIM`` (the new chunks' vectors are copied
there by every commit) with an exact FLAT index on inner product, so its top-k equals the
client-side exact search up to float32 ties. ``hybrid`` stays client-side: Milvus's
``hybrid_search`` needs both vector fields in one collection, and ours fuses the two
client-side retrievers with the index's tuned fusion (RRF, or convex over normalised
scores, which Milvus's rankers do not offer).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.errors import ConfigError, NotFoundError
from ctxselect.manifest import Manifest
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.types import Explanation, Hit

SERVE_ENV = "CTXSELECT_MILVUS_SERVE"
SERVABLE = ("bm25", "dense")
_NOT_IN_MAX = 5000  # dead ids put in the filter; above, the search fetches more and drops


def served_modes(store: Any, snapshot: Snapshot) -> tuple[str, ...]:
    """The modes ``store`` ranks itself for ``snapshot`` (see the module docstring)."""
    wanted = os.environ.get(SERVE_ENV, ",".join(SERVABLE)).lower()
    asked = {m.strip() for m in wanted.split(",") if m.strip()}
    modes = [m for m in SERVABLE if m in asked and m in snapshot.segments]
    if "bm25" in modes and store.layout.get("bm25") != _bm25_of(snapshot.manifest):
        modes.remove("bm25")
    if "dense" in modes and not _has_vectors(store, snapshot):
        modes.remove("dense")
    return tuple(modes)


def _has_vectors(store: Any, snapshot: Snapshot) -> bool:
    """True when the vector collection of the snapshot's dimension exists."""
    vectors = snapshot.segments["dense"].base.get("vectors")
    if vectors is None or vectors.ndim != 2:
        return False
    return bool(store._client.has_collection(mc.dense_name(store.address, vectors.shape[1])))


def _bm25_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The index's BM25 settings, read through the typed manifest."""
    bm25 = Manifest.from_dict(manifest).bm25
    return {"k1": bm25.k1, "b": bm25.b, "stem": bm25.stem, "stopwords": bm25.stopwords}


class _Searcher:
    """A Retriever whose scores come from a Milvus search (one generation of one store).

    Args:
        store: The MilvusStore.
        snapshot: The generation to search: its rows make the hits.
    """

    mode = ""
    metric = ""
    field = ""

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
                output_fields=["chunk_id"],
            )
        )

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Return the ``k`` best hits: best first, ties by chunk_id."""
        return self.search_many({"": query}, k)[""]

    def search_many(self, queries: Mapping[str, str], k: int = 10) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}`` (one server search for all queries)."""
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ConfigError(f"k (number of hits) must be a whole number >= 1, got {k!r}")
        qids = [q for q in queries if queries[q].strip()]
        out: dict[str, list[Hit]] = {q: [] for q in queries}
        if not qids:
            return out
        extra = len(self._dead) if len(self._dead) > _NOT_IN_MAX else 0
        limit = min(mc.QUERY_MAX, int(k) + extra + 1)  # one more: a tie at the cut
        found = self._search(self.queries([queries[q] for q in qids]), limit, self._filter)
        dead = set(self._dead) if extra else set()
        for qid, hits in zip(qids, found, strict=True):
            scored = [
                (float(h["distance"]), h["entity"]["chunk_id"])
                for h in hits
                if h["id"] not in dead and self.keep(float(h["distance"]))
            ]
            scored.sort(key=lambda pair: (-pair[0], pair[1]))
            rows = self.table.row_of
            out[qid] = [
                self.table.hit(rows[cid], rank, score)
                for rank, (score, cid) in enumerate(scored[:k], 1)
                if cid in rows
            ]
        return out

    def keep(self, score: float) -> bool:
        """Whether a hit with ``score`` is returned (a BM25 score of 0 matches nothing)."""
        return score > 0

    note = ""

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Give the server's score of ``chunk_id`` (no per-term breakdown)."""
        if chunk_id not in self.table.row_of:
            raise NotFoundError(
                f"chunk {chunk_id!r} is not in this index: use a chunk_id returned by search"
            )
        expr = f"{self._filter} and id in {mc.ints(self._ids_of(chunk_id))}"
        found = self._search(self.queries([query]), 1, expr) if query.strip() else [[]]
        scores = [float(h["distance"]) for h in found[0] if h["entity"]["chunk_id"] == chunk_id]
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
        self.collection = mc.dense_name(store.address, embedder.dim)

    def queries(self, texts: list[str]) -> list[Any]:
        """The query vectors, embedded in one batch."""
        vectors = np.asarray(self.embedder.embed(texts, query=True), dtype=np.float32)
        return [v.tolist() for v in vectors]

    def keep(self, score: float) -> bool:
        """Every embedded chunk has a cosine (only embedded chunks have vectors)."""
        return True

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

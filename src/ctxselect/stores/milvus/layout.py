"""The layout row of a Milvus index: how it was built, which index it is, and the
vector collections it made (mixed into :class:`~ctxselect.stores.milvus.store.MilvusStore`
through ``writes``), with the inserts every write goes through.

The row (id ``LAYOUT_ID`` of ``NAME__meta``) is written when the index is created and
holds JSON: ``layout`` (the collections' layout version), ``bm25`` (the analysis its
chunk collection was made with), ``dense`` (its ``NAME__denseDIM`` collections) and
``created``, a random id of this creation. Generations restart at 1 when the index's
collections are dropped and built again under the same NAME, so only ``created`` tells
the new index from the one a store opened (``rebuilt``): a reader then opens it again
and a writer refuses to commit what it prepared against the old one. An index made
before ``created`` was kept has none; the index built in its place has one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import rows as mr
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus.lease import LeaseRows

LAYOUT_ID = -1
"""The layout row's id in the meta collection."""
CREATED = "created"
"""The layout key of the index's identity (a random id written once, at creation)."""
_INSERT_ROWS = 256  # rows per insert: at most ~16 MB of 64 KB pieces in one message


def new_layout() -> dict[str, Any]:
    """The layout row of an index being created, with a new identity."""
    return {
        "layout": ms.LAYOUT_VERSION,
        "bm25": ms.DEFAULT_BM25,
        "dense": [],
        CREATED: uuid.uuid4().hex,
    }


class LayoutRows(LeaseRows):
    """The layout row, the vector collections and row inserts of a Milvus index."""

    uri: str
    address: mc.Address
    _client: Any
    layout: dict[str, Any]
    created: str | None
    """The identity of the index this store opened (None: made before identities)."""
    _dense_fields: dict[str, frozenset[str]]

    # -- rows --------------------------------------------------------------------------

    meta_row = staticmethod(mr.meta_row)

    def _put_meta(self, rows: Sequence[dict[str, Any]], upsert: bool = False) -> None:
        self._insert(self.address.meta, rows, upsert)

    def _insert(self, collection: str, rows: Sequence[dict[str, Any]], upsert: bool) -> None:
        call = self._client.upsert if upsert else self._client.insert
        for part in mc.batches(list(rows), _INSERT_ROWS):
            call(collection, list(part))

    # -- the layout row ----------------------------------------------------------------

    def read_layout(self) -> dict[str, Any]:
        """The layout row: how the index was built, its identity and vector collections."""
        rows = self._client.query(
            self.address.meta, filter=f"id == {LAYOUT_ID}", output_fields=["info"]
        )
        return dict(json.loads(rows[0]["info"])) if rows else {}

    def write_layout(self, layout: Mapping[str, Any]) -> None:
        """Write the layout row (an upsert: it replaces the row)."""
        row = self.meta_row(LAYOUT_ID, "layout", info=mc.dumps(dict(layout)))
        self._put_meta([row], upsert=True)

    def rebuilt(self) -> bool:
        """Whether the index this store opened is gone from its URI (its meta collection
        dropped) or another was built in its place (another ``created``): one query by
        primary key, cheap enough before every read.

        Raises:
            MilvusException: The server did not answer (callers say so in one line).
        """
        from pymilvus.exceptions import MilvusException

        try:
            layout = self.read_layout()
        except MilvusException as exc:
            if getattr(exc, "code", None) == mc.COLLECTION_NOT_FOUND:
                return True
            raise
        return layout.get(CREATED) != self.created

    # -- vector collections ------------------------------------------------------------

    def dense_collections(self) -> list[str]:
        """The index's vector collections: only those its layout row records (another
        index's collection may have a name that looks like one of ours)."""
        return ms.dense_names(self._client, self.address, self.layout.get("dense"))

    def owns_dense(self, name: str) -> bool:
        """Whether ``name`` is one of the index's vector collections (the layout row read
        again when it is not, since another process may have made it since)."""
        if name in self.dense_collections():
            return True
        self.layout = self.read_layout()
        return name in self.dense_collections()

    def _record_dense(self, extra: Sequence[str] = ()) -> None:
        """Record the index's vector collections plus ``extra`` in the layout row (read
        again first: a writer before this one may have recorded one)."""
        layout = self.read_layout()
        self.layout = layout
        owned = self.dense_collections()
        layout["dense"] = sorted({*owned, *extra})
        self.write_layout(layout)

    def dense_fields(self, collection: str) -> frozenset[str]:
        """The field names of a vector collection (cached: a collection's fields never
        change; one made before server-side hybrid has no ``body`` and ``sparse``)."""
        found = self._dense_fields.get(collection)
        if found is None:
            described = self._client.describe_collection(collection)
            found = frozenset(f["name"] for f in described.get("fields", []))
            self._dense_fields[collection] = found
        return found

    def _put_dense(
        self, arrays: Mapping[str, np.ndarray] | None, chunk_rows: Sequence[dict], born: int
    ) -> None:
        """Copy the new chunks' vectors (rows of ``arrays``, in ``chunk_rows`` order) to
        the vector collection of their dimension, for server-side ``dense``."""
        if not arrays or "vectors" not in arrays or not len(chunk_rows):
            return
        vectors = np.asarray(arrays["vectors"], dtype=np.float32)
        embedded = np.asarray(arrays.get("embedded", np.ones(len(vectors))), dtype=bool)
        if vectors.ndim != 2 or len(vectors) != len(chunk_rows):
            return  # not one vector per new chunk: dense stays client-side
        name = ms.dense_name(self.address, vectors.shape[1])
        if not self._client.has_collection(name):
            self._record_dense([name])  # first: a crash after it leaves no unknown collection
            bm25 = self.layout.get("bm25")
            schema, index = ms.dense_schema(self._client, vectors.shape[1], bm25)
            self._client.create_collection(
                name, schema=schema, index_params=index, consistency_level="Strong"
            )
        rows = [
            {"id": r["id"], "chunk_id": r["chunk_id"], "born": born, "vector": v.tolist()}
            for r, v, keep in zip(chunk_rows, vectors, embedded, strict=True)
            if keep
        ]
        if "sparse" in self.dense_fields(name):  # older collections hold vectors only
            texts = {r["id"]: r["body"] for r in chunk_rows}
            for row in rows:
                row["body"] = texts[row["id"]]
        self._insert(name, rows, upsert=False)

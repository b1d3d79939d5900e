"""Rows of a large Milvus index: chunks read from the server when a hit needs them.

A snapshot of an index above ``TEXTS_IN_MEMORY_MAX`` chunks keeps only the row ids (one
int64 per chunk) and reads each hit's chunk by its row id, as the embedded store's
``LazyRows`` reads SQLite: memory does not grow with the corpus's text, and a reload
after an update does not re-read every chunk. Rows of a generation never change, so a
row id read at any time gives the chunk the snapshot saw (unless a compaction two
generations later purged it: then the row is stale, as in the embedded store).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from ctxselect.errors import IndexCorruptError
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus.calls import client_of
from ctxselect.stores.row_of import ChunkIdOfRow, RowOfChunk
from ctxselect.types import Chunk, Hit

_ID_FIELDS = ["id", "doc_id"]  # what a filter reads of every row
P = ParamSpec("P")
R = TypeVar("R")


def _reaching(
    method: Callable[Concatenate[MilvusLazyRows, P], R],
) -> Callable[Concatenate[MilvusLazyRows, P], R]:
    """Turn the client's failures of a read into the store's one-line error naming the
    server (a hit's chunk is read long after the snapshot, when the server may be gone or
    the store closed)."""

    @functools.wraps(method)
    def wrapper(self: MilvusLazyRows, *args: P.args, **kwargs: P.kwargs) -> R:
        client_of(self._store)  # a closed store says so, not AttributeError
        with mc.reaching(self._store.address, self._store):
            return method(self, *args, **kwargs)

    return wrapper


class StaleRowsError(IndexCorruptError):
    """A row's chunk is gone from the server (a compaction purged the generation read)."""


class MilvusLazyRows:
    """Rows whose chunks are read from the chunk collection on demand.

    Args:
        store: The MilvusStore.
        generation: The generation the rows belong to (texts of long chunks come from
            its documents).
        rowids: Chunk row id of every global row.
        dead: Global rows deleted since the base (never returned, not in ``row_of``).
    """

    def __init__(
        self, store: Any, generation: int, rowids: np.ndarray, dead: np.ndarray | None
    ) -> None:
        self._store = store
        self._generation = generation
        self._rowids = np.asarray(rowids, dtype=np.int64)
        self._dead = set(dead.tolist()) if dead is not None else set()
        self._order = np.argsort(self._rowids, kind="stable")
        self.chunk_ids: Sequence[str] = ChunkIdOfRow(
            lambda row: self.chunk(row).chunk_id, len(rowids)
        )
        self.row_of: Mapping[str, int] = RowOfChunk(
            self.row_of_chunk, lambda row: self.chunk(row).chunk_id, len(rowids)
        )

    def __len__(self) -> int:
        return len(self._rowids)

    def _rows(self, expr: str) -> list[dict]:
        return mc.query_all(self._store._client, self._store.address.name, expr, ms.CHUNK_FIELDS)

    @_reaching
    def chunk(self, row: int) -> Chunk:
        """Return the chunk of global ``row``."""
        found = self._rows(f"id == {int(self._rowids[row])}")
        if not found:
            raise self._stale(row)
        return self._store.to_chunk(found[0], self._generation)

    def _stale(self, row: int) -> StaleRowsError:
        return StaleRowsError(
            f"row {row} of index {self._store.uri} has no chunk on the server any more "
            f"(a compaction removed its generation): search again"
        )

    @_reaching
    def all_doc_ids(self) -> list[str]:
        """Return every row's doc id from one query over the generation's chunk rows (a
        filter needs them all; row by row, a million rows would be a million queries)."""
        expr = f"born <= {self._generation}"
        found = mc.query_all(self._store._client, self._store.address.name, expr, _ID_FIELDS)
        doc_of = {int(r["id"]): str(r["doc_id"]) for r in found}
        out: list[str] = []
        for row, rowid in enumerate(self._rowids.tolist()):
            doc_id = doc_of.get(rowid)
            if doc_id is None:
                raise self._stale(row)
            out.append(doc_id)
        return out

    def hit(self, row: int, rank: int, score: float) -> Hit:
        """Make the Hit for ``row``, reading its chunk by row id."""
        c = self.chunk(row)
        return Hit(rank, c.chunk_id, c.doc_id, score, c.start, c.end, c.n_tokens, c.text, c.header)

    @_reaching
    def hit_of(self, entity: Mapping[str, Any], rank: int, score: float) -> Hit:
        """Make the Hit of a chunk row a search returned with every chunk field."""
        c = self._store.to_chunk(entity, self._generation)
        return Hit(rank, c.chunk_id, c.doc_id, score, c.start, c.end, c.n_tokens, c.text, c.header)

    @_reaching
    def row_of_chunk(self, chunk_id: str) -> int | None:
        """Return the live global row of ``chunk_id``, or None."""
        expr = f"ckey == {mc.hash63(chunk_id)} and born <= {self._generation}"
        for found in self._rows(expr):
            if found["chunk_id"] != chunk_id:
                continue
            row = self.row_of_id(int(found["id"]))
            if row is not None and row not in self._dead:
                return row
        return None

    def row_of_id(self, rowid: int) -> int | None:
        """Return the global row holding the chunk row ``rowid``, or None."""
        ordered = self._rowids[self._order]
        i = int(np.searchsorted(ordered, rowid))
        if i < len(ordered) and int(ordered[i]) == rowid:
            return int(self._order[i])
        return None

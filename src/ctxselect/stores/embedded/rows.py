"""Row sources for the retrievers: every text in memory, or texts read by row id on demand.

A retriever's row ``i`` is the i-th row of the global row order (base rows, then delta
rows). A small index loads every chunk into a :class:`ChunkTable` (a search never goes
back to disk); a large one keeps only the row ids and reads each hit's chunk from SQLite
by its integer primary key, so memory does not grow with the corpus's text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect.errors import IndexCorruptError
from ctxselect.stores.embedded import texts
from ctxselect.stores.row_of import ChunkIdOfRow, RowOfChunk
from ctxselect.types import ChunkTable, Hit

# A hit's text is sliced from its document by SQLite (one row read, no document copied).
_HIT_SQL = (
    f'SELECT c.chunk_id, c.doc_id, c.start, c."end", c.n_tokens, {texts.TEXT}, c.header '
    f"FROM {texts.FROM} WHERE c.id = ?"
)
_ID_SQL = "SELECT chunk_id FROM chunks WHERE id = ?"


class StaleRowsError(IndexCorruptError):
    """A row's chunk is missing from the generation being read (searches read inside a
    read transaction on their generation, so this means damage: run verify)."""


def _stale(row: int) -> StaleRowsError:
    return StaleRowsError(
        f"row {row} has no chunk in this generation of the index: run `ctxselect verify`"
    )


class LazyRows:
    """Rows whose chunks are read from SQLite when a hit needs them.

    Args:
        conn: The store's connection (shared; guarded by ``lock``).
        lock: Serialises this connection's use across threads.
        rowids: Chunk row id (``chunks.id``) of every global row; -1 for none.
        folder: The index folder (named when a chunk's text cannot be found).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        lock: AbstractContextManager[Any],
        rowids: np.ndarray,
        folder: Path = Path("."),
    ) -> None:
        self._conn = conn
        self._lock = lock
        self._rowids = rowids
        self._folder = folder
        self._order: np.ndarray | None = None
        self.chunk_ids: Sequence[str] = ChunkIdOfRow(self.chunk_id, len(rowids))
        self.row_of: Mapping[str, int] = RowOfChunk(self.row_of_chunk, self.chunk_id, len(rowids))

    def __len__(self) -> int:
        return len(self._rowids)

    def fetch(self, row: int) -> tuple[Any, ...]:
        """Return (chunk_id, doc_id, start, end, n_tokens, text, header) of ``row``."""
        with self._lock:
            found = self._conn.execute(_HIT_SQL, (int(self._rowids[row]),)).fetchone()
        if found is None:
            raise _stale(row)
        return texts.checked(self._folder, tuple(found), 5)

    def chunk_id(self, row: int) -> str:
        """Return the chunk_id of ``row`` (ties between segments: no text is read)."""
        with self._lock:
            found = self._conn.execute(_ID_SQL, (int(self._rowids[row]),)).fetchone()
        if found is None:
            raise _stale(row)
        return str(found[0])

    def all_doc_ids(self) -> list[str]:
        """Return every row's doc id in one pass over the chunks (a filter needs them all;
        row by row, a million rows would be a million queries). A row deleted since the
        base has no chunk any more: its doc id is "", as in :func:`eager_table` (searches
        never return it; a chunk missing for another reason is caught when a hit reads it).
        """
        with self._lock:
            doc_of = dict(self._conn.execute("SELECT id, doc_id FROM chunks"))
        return [doc_of.get(rid, "") for rid in self._rowids.tolist()]

    def hit(self, row: int, rank: int, score: float) -> Hit:
        """Make the Hit for ``row``, reading its chunk by row id."""
        cid, doc, start, end, n_tokens, text, header = self.fetch(row)
        return Hit(rank, cid, doc, score, start, end, n_tokens, text, header)

    def row_of_chunk(self, chunk_id: str) -> int | None:
        """Return the global row of ``chunk_id``, or None if it is not live."""
        with self._lock:
            found = self._conn.execute("SELECT id FROM chunks WHERE chunk_id = ?", (chunk_id,))
            got = found.fetchone()
        if got is None:
            return None
        if self._order is None:
            self._order = np.argsort(self._rowids, kind="stable")
        sorted_ids = self._rowids[self._order]
        i = int(np.searchsorted(sorted_ids, got[0]))
        if i < len(sorted_ids) and int(sorted_ids[i]) == got[0]:
            return int(self._order[i])
        return None


# Stored texts (NULL: the document's span), filled in by ``texts.filled``.
_COLUMNS = 'id, chunk_id, doc_id, start, "end", n_tokens, text, header'
_LAYOUT = texts.Layout(ident=1, doc=2, start=3, end=4, text=6)
_BLANK = ("", "", 0, 0, 0, "", "")


def eager_table(
    conn: sqlite3.Connection,
    rowids: np.ndarray,
    n_base: int,
    dead: np.ndarray,
    previous: tuple[np.ndarray, ChunkTable] | None = None,
    check: Callable[[list[Any]], None] | None = None,
    folder: Path = Path("."),
) -> ChunkTable:
    """Load every chunk into a ChunkTable whose row ``i`` is the chunk with ``rowids[i]``.

    Rows are the base's ``n_base`` rows (live chunks in chunk_id order when it was
    written), then delta rows. Rows deleted since the base (``dead``, global rows) are
    never returned by a search and are left out of ``row_of``. With ``previous`` (the row
    ids and table of an earlier generation with the same base), the base rows and known
    delta rows are reused and only new chunks are read: a reload after an update costs
    the update, not the corpus. ``check`` sees every chunk row when all are read (the
    store compares them with its checksum). Texts are sliced from their documents once,
    here (``texts.filled``): a search never slices.
    """
    ids = rowids.tolist()
    if previous is None:
        cursor = conn.execute(f"SELECT {_COLUMNS} FROM chunks ORDER BY chunk_id")
        found = list(texts.filled(conn, cursor, _LAYOUT, folder))
        if check is not None:
            check(found)
        if not len(dead) and [r[0] for r in found] == ids:  # compacted: one ordered scan
            cols = [tuple(c) for c in zip(*found, strict=True)] if found else [()] * 8
            return ChunkTable(cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7])
        by_id = {r[0]: r[1:] for r in found}
        rows = [by_id.get(rid, _BLANK) for rid in ids]
        columns = [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(7)]
    else:
        old_ids, old = previous
        columns = [list(c[:n_base]) for c in _columns(old)]
        old_rows = {rid: i for i, rid in enumerate(old_ids[n_base:].tolist(), n_base)}
        new = [rid for rid in ids[n_base:] if rid not in old_rows]
        fetched = _fetch(conn, new, folder)
        old_cols = _columns(old)
        for rid in ids[n_base:]:
            i = old_rows.get(rid)
            row = tuple(c[i] for c in old_cols) if i is not None else fetched.get(rid, _BLANK)
            for column, value in zip(columns, row, strict=True):
                column.append(value)
    chunk_ids = columns[0]
    row_of = dict(zip(chunk_ids, range(len(chunk_ids)), strict=True))
    for r in dead.tolist():  # a deleted row's id may now name a newer row: keep that one
        if row_of.get(chunk_ids[r]) == r:
            del row_of[chunk_ids[r]]
    row_of.pop("", None)
    c = [tuple(col) for col in columns]
    return ChunkTable(c[0], c[1], c[2], c[3], c[4], c[5], c[6], row_of=row_of)


def _columns(table: ChunkTable) -> tuple[tuple[Any, ...], ...]:
    t = table
    return (t.chunk_ids, t.doc_ids, t.starts, t.ends, t.n_tokens, t.texts, t.headers)


def _fetch(conn: sqlite3.Connection, ids: list[int], folder: Path) -> dict[int, tuple[Any, ...]]:
    out: dict[int, tuple[Any, ...]] = {}
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        sql = f"SELECT {_COLUMNS} FROM chunks WHERE id IN ({','.join('?' * len(part))})"
        rows = texts.filled(conn, conn.execute(sql, part), _LAYOUT, folder)
        out.update((r[0], tuple(r[1:])) for r in rows)
    return out

"""The chunk and document reads of :class:`~ctxselect.stores.embedded.sqlite.SQLiteStore`.

Chunks and documents by id, content hashes, metadata fields, spans of a document's text
and the live row order. Every read turns an SQLite failure into ``IndexCorruptError``
(``guarded_read``): a damaged index file fails in one line, not with a traceback.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import ParamSpec, TypeVar

import numpy as np

from ctxselect.errors import CtxselectError, IndexCorruptError, NotFoundError
from ctxselect.stores.embedded import fields, texts
from ctxselect.types import Chunk, ChunkTable, Document

# chunks.text is NULL when the chunk is its document's span (see ``texts``): a few rows
# are read with SQLite slicing it (CHUNK_COLUMNS), all of them with ``texts.filled``.
CHUNK_COLUMNS = (
    f'c.chunk_id, c.doc_id, c.ordinal, c.start, c."end", {texts.TEXT}, c.header, c.n_tokens, '
    "c.parent_id"
)
_RAW_COLUMNS = 'chunk_id, doc_id, ordinal, start, "end", text, header, n_tokens, parent_id'
_RAW_LAYOUT = texts.Layout(ident=0, doc=1, start=3, end=4, text=5)

# SQLite's messages quote damaged schema text, which may not decode as UTF-8.
UNREADABLE = (sqlite3.DatabaseError, UnicodeDecodeError)

P = ParamSpec("P")
R = TypeVar("R")


def guarded_read(method: Callable[P, R]) -> Callable[P, R]:
    """Turn SQLite failures of a read into IndexCorruptError (one line, no traceback)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except UNREADABLE as exc:
            store = args[0]
            raise store.corrupt(exc) from exc  # type: ignore[attr-defined]

    return wrapper


class Lookups:
    """Chunk and document reads of an index folder (mixed into SQLiteStore)."""

    folder: Path
    path: Path
    _conn: sqlite3.Connection
    _lock: threading.RLock

    def corrupt(self, exc: BaseException) -> CtxselectError:
        """The error for an index file SQLite cannot read (or a closed store)."""
        if isinstance(exc, sqlite3.ProgrammingError):
            return CtxselectError(
                f"index {self.folder} was closed ({exc}): open it again with open_index"
            )
        return IndexCorruptError(
            f"{self.path} is not a readable ctxselect index ({exc}): run `ctxselect verify "
            f"--index {self.folder}`, or delete the folder and rebuild it with "
            f"`ctxselect index PATH... --index {self.folder}`"
        )

    @guarded_read
    def doc_hashes(self, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
        """Return ``{doc_id: content_hash}`` of every document, or of ``doc_ids`` only."""
        sql = "SELECT doc_id, content_hash FROM documents"
        with self._lock:
            if doc_ids is None:
                return dict(self._conn.execute(sql))
            out: dict[str, str] = {}
            for part in _batches(list(doc_ids)):
                marks = ",".join("?" * len(part))
                out.update(self._conn.execute(f"{sql} WHERE doc_id IN ({marks})", part))
            return out

    @guarded_read
    def chunks_of(self, doc_ids: Sequence[str]) -> list[Chunk]:
        """Return the chunks of ``doc_ids`` (any order; each document read once)."""
        out: list[Chunk] = []
        with self._lock:
            for part in _batches(list(doc_ids)):
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT {_RAW_COLUMNS} FROM chunks WHERE doc_id IN ({marks})", part
                )
                filled = texts.filled(self._conn, rows, _RAW_LAYOUT, self.folder)
                out.extend(Chunk(*row) for row in filled)
        return out

    def iter_chunks(self) -> Iterator[Chunk]:
        """Yield every chunk in chunk_id order."""
        try:
            cursor = self._conn.execute(f"SELECT {_RAW_COLUMNS} FROM chunks ORDER BY chunk_id")
            for row in texts.filled(self._conn, cursor, _RAW_LAYOUT, self.folder):
                yield Chunk(*row)
        except UNREADABLE as exc:
            raise self.corrupt(exc) from exc

    @guarded_read
    def chunk_table(self) -> ChunkTable:
        """Return every live chunk as columns, row order = chunk_id order."""
        with self._lock:
            cursor = self._conn.execute(
                'SELECT chunk_id, doc_id, start, "end", n_tokens, text, header '
                "FROM chunks ORDER BY chunk_id"
            )
            layout = texts.Layout(ident=0, doc=1, start=2, end=3, text=5)
            rows = list(texts.filled(self._conn, cursor, layout, self.folder))
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        ids, docs, starts, ends, n_tokens, text, headers = (tuple(col) for col in columns)
        return ChunkTable(ids, docs, starts, ends, n_tokens, text, headers)

    @guarded_read
    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk or raise NotFoundError."""
        with self._lock:
            row = self._conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM {texts.FROM} WHERE c.chunk_id = ?", (chunk_id,)
            ).fetchone()
        if row is None:
            raise NotFoundError(
                f"no chunk {chunk_id!r} in index {self.folder}: chunk ids look like "
                f"'DOC_ID#N' and come from `ctxselect search`"
            )
        return Chunk(*texts.checked(self.folder, row, 5))

    @guarded_read
    def get_document(self, doc_id: str) -> Document:
        """Return one document or raise NotFoundError."""
        with self._lock:
            row = self._conn.execute(
                "SELECT doc_id, text, title, source, content_hash, kind FROM documents "
                "WHERE doc_id = ?",
                (doc_id,),
            ).fetchone()
        if row is None:
            raise NotFoundError(
                f"no document {doc_id!r} in index {self.folder}: document ids are paths "
                f"relative to the indexed root (see `ctxselect search`)"
            )
        return Document(*row)

    @guarded_read
    def document_fields(self, doc_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """Return the metadata ``--where`` filters on of each stored one of ``doc_ids``:
        ``kind``, ``path``, ``title`` and its user fields."""
        with self._lock:
            return fields.read(self._conn, doc_ids)

    @guarded_read
    def field_keys(self) -> list[str]:
        """Return every metadata key the index stores (built-in ones first)."""
        with self._lock:
            return fields.keys(self._conn)

    @guarded_read
    def span_text(self, doc_id: str, start: int, end: int) -> str:
        """Return the document's text in ``[start, end)`` without loading all of it."""
        with self._lock:
            row = self._conn.execute(
                "SELECT substr(text, ?, ?), instr(CAST(text AS BLOB), X'00') FROM documents "
                "WHERE doc_id = ?",
                (start + 1, max(0, end - start), doc_id),
            ).fetchone()
            if row is not None and (row[1] or start < 0 or end < 0):
                # SQLite's substr stops at a NUL and counts negative offsets its own way:
                # slice in Python, as document.text[start:end] does
                (text,) = self._conn.execute(
                    "SELECT text FROM documents WHERE doc_id = ?", (doc_id,)
                ).fetchone()
                return str(text[start:end])
        if row is None:
            raise NotFoundError(f"no document {doc_id!r} in index {self.folder}")
        return str(row[0])

    @guarded_read
    def live_order(self) -> np.ndarray:
        """Return the row id of every live chunk, in chunk_id order."""
        with self._lock:
            ids = self._conn.execute("SELECT id FROM chunks ORDER BY chunk_id").fetchall()
        return np.fromiter((i for (i,) in ids), dtype=np.int64, count=len(ids))


def _batches(items: list[str], size: int = 500) -> Iterator[list[str]]:
    """SQLite limits bound parameters per statement: query in slices."""
    for i in range(0, len(items), size):
        yield items[i : i + size]

"""SQLiteStore: the embedded default, one SQLite file holding the whole index.

SQLite gives transactions (a killed indexer leaves the last committed state), a single
file to copy or delete, and no service to run. Index artefacts (postings, lengths) are
numpy arrays stored as BLOBs and loaded with ``np.frombuffer``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect.errors import (
    IndexCorruptError,
    IndexMismatchError,
    IndexNotFoundError,
    NotFoundError,
)
from ctxselect.types import Chunk, ChunkTable, Document

SCHEMA_VERSION = 1
FILE_NAME = "index.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL,
    title TEXT NOT NULL, content_hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, header TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, parent_id TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS arrays (
    name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL);
"""

_CHUNK_COLUMNS = 'chunk_id, doc_id, ordinal, start, "end", text, header, n_tokens, parent_id'


class SQLiteStore:
    """An index in ``<folder>/index.sqlite``.

    Args:
        folder: The index folder.
        create: Create the folder and file when missing; otherwise a missing index
            raises IndexNotFoundError naming the command that creates one.
    """

    def __init__(self, folder: str | os.PathLike[str], *, create: bool = False) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE_NAME
        self.uri = str(self.path)
        if not self.path.is_file():
            if not create:
                raise IndexNotFoundError(
                    f"no index at {self.folder}: create one with "
                    f"`ctxselect index PATH... --index {self.folder}`"
                )
            self.folder.mkdir(parents=True, exist_ok=True)
        self._conn = self._connect()
        self._depth = 0

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise IndexCorruptError(
                f"{self.path} is not a readable ctxselect index ({exc}): delete the folder "
                f"and rebuild it with `ctxselect index PATH... --index {self.folder}`"
            ) from exc
        self._check_version(conn)
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT value FROM manifest WHERE key = 'schema_version'").fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO manifest VALUES ('schema_version', ?)", (json.dumps(SCHEMA_VERSION),)
            )
        elif json.loads(row[0]) != SCHEMA_VERSION:
            raise IndexMismatchError(
                f"index {self.folder} has schema version {row[0]}, this ctxselect reads "
                f"version {SCHEMA_VERSION}: rebuild it with "
                f"`rm -r {self.folder} && ctxselect index PATH... --index {self.folder}`"
            )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes; nested calls join the outer transaction."""
        if self._depth == 0:
            self._conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self._conn.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            self._conn.execute("COMMIT")

    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest as a dict of JSON values."""
        rows = self._conn.execute("SELECT key, value FROM manifest").fetchall()
        return {key: json.loads(value) for key, value in rows}

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Upsert every key of ``manifest`` (schema_version is kept)."""
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO manifest VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in manifest.items() if k != "schema_version"],
            )

    def doc_hashes(self) -> dict[str, str]:
        """Return ``{doc_id: content_hash}``."""
        return dict(self._conn.execute("SELECT doc_id, content_hash FROM documents"))

    def write_documents(
        self, documents: Sequence[Document], chunks: Sequence[Chunk], remove: Sequence[str]
    ) -> None:
        """Replace ``documents`` and their chunks, delete ``remove``, in one transaction."""
        gone = [(d,) for d in remove] + [(d.doc_id,) for d in documents]
        with self.transaction():
            self._conn.executemany("DELETE FROM chunks WHERE doc_id = ?", gone)
            self._conn.executemany("DELETE FROM documents WHERE doc_id = ?", gone)
            self._conn.executemany(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
                [(d.doc_id, d.source, d.kind, d.title, d.content_hash, d.text) for d in documents],
            )
            self._conn.executemany(
                f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        c.chunk_id,
                        c.doc_id,
                        c.ordinal,
                        c.start,
                        c.end,
                        c.text,
                        c.header,
                        c.n_tokens,
                        c.parent_id,
                    )
                    for c in chunks
                ],
            )

    def iter_chunks(self) -> Iterator[Chunk]:
        """Yield every chunk in chunk_id order."""
        cursor = self._conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks ORDER BY chunk_id")
        for row in cursor:
            yield Chunk(*row)

    def chunk_table(self) -> ChunkTable:
        """Return every chunk as columns, row order = chunk_id order."""
        rows = self._conn.execute(
            'SELECT chunk_id, doc_id, start, "end", n_tokens, text, header '
            "FROM chunks ORDER BY chunk_id"
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        ids, docs, starts, ends, n_tokens, texts, headers = (tuple(col) for col in columns)
        return ChunkTable(ids, docs, starts, ends, n_tokens, texts, headers)

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk or raise NotFoundError."""
        row = self._conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE chunk_id = ?", (chunk_id,)
        ).fetchone()
        if row is None:
            raise NotFoundError(
                f"no chunk {chunk_id!r} in index {self.folder}: chunk ids look like "
                f"'DOC_ID#N' and come from `ctxselect search`"
            )
        return Chunk(*row)

    def get_document(self, doc_id: str) -> Document:
        """Return one document or raise NotFoundError."""
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

    def span_text(self, doc_id: str, start: int, end: int) -> str:
        """Return the document's text in ``[start, end)`` without loading all of it."""
        row = self._conn.execute(
            "SELECT substr(text, ?, ?) FROM documents WHERE doc_id = ?",
            (start + 1, max(0, end - start), doc_id),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no document {doc_id!r} in index {self.folder}")
        return str(row[0])

    def write_arrays(self, prefix: str, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace every array under ``prefix/`` with ``arrays``."""
        with self.transaction():
            self._conn.execute("DELETE FROM arrays WHERE name LIKE ?", (f"{prefix}/%",))
            self._conn.executemany(
                "INSERT INTO arrays VALUES (?, ?, ?, ?)",
                [
                    (
                        f"{prefix}/{name}",
                        a.dtype.str,
                        json.dumps(a.shape),
                        np.ascontiguousarray(a).tobytes(),
                    )
                    for name, a in arrays.items()
                ],
            )

    def read_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """Return ``{name: array}`` stored under ``prefix/``."""
        rows = self._conn.execute(
            "SELECT name, dtype, shape, data FROM arrays WHERE name LIKE ?", (f"{prefix}/%",)
        ).fetchall()
        out: dict[str, np.ndarray] = {}
        for name, dtype, shape, data in rows:
            out[name[len(prefix) + 1 :]] = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(
                json.loads(shape)
            )
        return out

    def counts(self) -> dict[str, int]:
        """Return the number of documents and chunks."""
        docs = self._conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return {"documents": int(docs), "chunks": int(chunks)}

    def disk_bytes(self) -> int:
        """Return the size of the index files on disk."""
        return sum(p.stat().st_size for p in self.folder.glob(f"{FILE_NAME}*") if p.is_file())

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

"""Upgrade a schema-1 index (one SQLite file, arrays as BLOBs) to schema 2 in place.

Schema 1 stored each mode's arrays as BLOBs over the chunks in chunk_id order, which is
exactly a compacted base segment of schema 2; chunks keep their SQLite row ids, which
become the explicit ``id`` column. So the migration moves bytes and re-derives nothing:
searches return the same hits and scores before and after.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np

from ctxselect.errors import IndexMismatchError
from ctxselect.stores.embedded import files, integrity

if TYPE_CHECKING:
    from ctxselect.stores.embedded.sqlite import SQLiteStore

_V2_CHUNKS = """
CREATE TABLE chunks_v2 (
    id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, header TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, parent_id TEXT NOT NULL, text TEXT NOT NULL)
"""
_COPY = (
    'INSERT INTO chunks_v2 (id, chunk_id, doc_id, ordinal, start, "end", header, n_tokens, '
    'parent_id, text) SELECT rowid, chunk_id, doc_id, ordinal, start, "end", header, '
    "n_tokens, parent_id, text FROM chunks"
)


def _v1_arrays(conn: sqlite3.Connection) -> dict[str, dict[str, np.ndarray]]:
    arrays: dict[str, dict[str, np.ndarray]] = {}
    for name, dtype, shape, data in conn.execute("SELECT name, dtype, shape, data FROM arrays"):
        mode, _, array = str(name).partition("/")
        value = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
        arrays.setdefault(mode, {})[array] = value
    return arrays


def migrate_v1(store: SQLiteStore) -> None:
    """Rewrite ``store`` (schema 1) as schema 2; the caller holds the writer lock.

    Raises:
        IndexMismatchError: The old index cannot be migrated; the message gives the
            command that rebuilds it.
    """
    conn = store._conn
    try:
        arrays = _v1_arrays(conn)
        rowids = np.fromiter(
            (r for (r,) in conn.execute("SELECT rowid FROM chunks ORDER BY chunk_id")), np.int64
        )
        manifest = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM manifest")}
    except sqlite3.DatabaseError as exc:
        raise _cannot(store, exc) from exc
    if not arrays and len(rowids):
        raise _cannot(store, "it holds chunks but no ranking arrays")
    base = files.write_base(store.folder, files.new_base_name(1), arrays, rowids)
    try:
        with store.transaction():
            _rewrite_tables(conn)
            counts = _counts(conn)
            keys: dict[str, Any] = {
                "schema_version": 2,
                "generation": int(manifest.get("generation", 0)) + 1,
                "base": base,
                "segments": [],
                "counts": counts,
                "migrated_from": 1,
                integrity.CHUNK_DIGEST_KEY: integrity.digest_after(conn, None, 0, 0, True),
            }
            conn.executemany(
                "INSERT OR REPLACE INTO manifest VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in keys.items()],
            )
            integrity.seal(conn)
    except sqlite3.DatabaseError as exc:
        files.remove_orphans(store.folder, None)
        raise _cannot(store, exc) from exc


def _rewrite_tables(conn: sqlite3.Connection) -> None:
    from ctxselect.stores.embedded.sqlite import SCHEMA

    conn.execute(_V2_CHUNKS)
    conn.execute(_COPY)
    conn.execute("DROP TABLE chunks")
    conn.execute("ALTER TABLE chunks_v2 RENAME TO chunks")
    conn.execute("DROP TABLE IF EXISTS arrays")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    docs = int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    n, tokens = conn.execute("SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks").fetchone()
    return {"documents": docs, "chunks": int(n), "tokens": int(tokens)}


def _cannot(store: SQLiteStore, why: object) -> IndexMismatchError:
    return IndexMismatchError(
        f"index {store.folder} has schema version 1 and could not be upgraded to 2 ({why}): "
        f"rebuild it with `rm -r {store.folder} && ctxselect index PATH... --index "
        f"{store.folder}`"
    )

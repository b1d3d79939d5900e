"""Upgrade an older index in place to the current schema (4): one path for every version.

- Schema 1 stored each mode's arrays as BLOBs over the chunks in chunk_id order, which is
  exactly a compacted base segment: they move to a base file, and chunks keep their
  SQLite row ids, which become the explicit ``id`` column.
- Schema 2 stored every chunk's text beside its document's (a second copy of the corpus).
  Schema 3 stores NULL for a chunk that is its document's span and reads it back from the
  document (``texts``).

- Schema 3 had no ``doc_fields`` table (user metadata ``--where`` filters on): schema 4
  adds it, empty, and changes nothing else; documents indexed before have no user fields
  until they are indexed again (their ``kind``, ``path`` and ``title`` filter as before).

Schemas 1 and 2 rewrite the chunk table once, in one transaction: the copy keeps a text
only where it is not exactly its document's span, as SQLite slices it. The chunk checksum is then
recomputed over the texts as read and must equal the one the old index stored, so an
upgrade that would change any text a search shows is refused and rolled back. Searches
return the same hits, scores and texts before and after. The space freed is returned to
the file system afterwards (``VACUUM``, best effort: a reader may keep it for later).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np

from ctxselect.errors import IndexMismatchError
from ctxselect.stores.embedded import fields, files, integrity
from ctxselect.stores.embedded.schema import SCHEMA, SCHEMA_VERSION

if TYPE_CHECKING:
    from ctxselect.stores.embedded.handle import StoreHandle

_NEW_CHUNKS = """
CREATE TABLE chunks_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, header TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, parent_id TEXT NOT NULL, text TEXT)
"""
# NULL where the text is its document's span; never for a document holding NUL (SQLite's
# substr stops there) or a chunk without a document (nothing to read it back from).
_COPY = """
INSERT INTO chunks_new (id, chunk_id, doc_id, ordinal, start, "end", header, n_tokens,
                        parent_id, text)
SELECT c.{id}, c.chunk_id, c.doc_id, c.ordinal, c.start, c."end", c.header, c.n_tokens,
       c.parent_id,
       CASE WHEN c.start >= 0 AND c."end" >= c.start
                 AND instr(CAST(d.text AS BLOB), x'00') = 0
                 AND c.text = substr(d.text, c.start + 1, c."end" - c.start)
            THEN NULL ELSE c.text END
FROM chunks c LEFT JOIN documents d ON d.doc_id = c.doc_id
"""


def _v1_arrays(conn: sqlite3.Connection) -> dict[str, dict[str, np.ndarray]]:
    arrays: dict[str, dict[str, np.ndarray]] = {}
    for name, dtype, shape, data in conn.execute("SELECT name, dtype, shape, data FROM arrays"):
        mode, _, array = str(name).partition("/")
        value = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
        arrays.setdefault(mode, {})[array] = value
    return arrays


def upgrade(store: StoreHandle, version: int) -> None:
    """Rewrite ``store`` (schema ``version``: 1, 2 or 3) as the current schema; the caller
    holds the writer lock.

    Raises:
        IndexMismatchError: The old index cannot be upgraded; the message gives the
            command that rebuilds it.
        IndexCorruptError: The old index is damaged (its chunk rows do not match their
            checksum); nothing was changed.
    """
    conn = store._conn
    if version == 3:
        _add_fields(store)
        return
    base = None
    try:
        manifest = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM manifest")}
        if version == 1:
            arrays = _v1_arrays(conn)
            rowids = np.fromiter(
                (r for (r,) in conn.execute("SELECT rowid FROM chunks ORDER BY chunk_id")),
                np.int64,
            )
            if not arrays and len(rowids):
                raise _cannot(store, version, "it holds chunks but no ranking arrays")
            base = files.write_base(store.folder, files.new_base_name(1), arrays, rowids)
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise _cannot(store, version, exc) from exc
    try:
        with store.transaction():
            _rewrite_chunks(conn, "rowid" if version == 1 else "id")
            digest = integrity.digest_all(conn)
            stored = manifest.get(integrity.CHUNK_DIGEST_KEY)
            if isinstance(stored, int) and stored != digest:
                raise integrity.damaged(
                    store.folder, store.path, "a chunk row does not match the chunk checksum"
                )
            keys = _manifest_keys(conn, manifest, version, base, digest)
            conn.executemany(
                "INSERT OR REPLACE INTO manifest VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in keys.items()],
            )
            integrity.seal(conn)
    except BaseException as exc:
        if base is not None:  # the transaction rolled back: nothing names the new file
            with contextlib.suppress(OSError):
                (store.folder / str(base["file"])).unlink()
        if isinstance(exc, sqlite3.DatabaseError):
            raise _cannot(store, version, exc) from exc
        raise
    _reclaim(conn)


def _manifest_keys(
    conn: sqlite3.Connection,
    manifest: dict[str, Any],
    version: int,
    base: dict[str, Any] | None,
    digest: int,
) -> dict[str, Any]:
    keys: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generation": int(manifest.get("generation", 0)) + 1,
        "migrated_from": manifest.get("migrated_from", version),
        integrity.CHUNK_DIGEST_KEY: digest,
    }
    if base is not None:  # schema 1: its arrays became the base segment
        keys.update(base=base, segments=[], counts=_counts(conn))
    return keys


def _rewrite_chunks(conn: sqlite3.Connection, id_column: str) -> None:
    """Copy the chunk table into the current layout, keeping every row id and the id
    sequence (deleted rows' ids are never reused: segments and dead rows name them)."""
    conn.execute(_NEW_CHUNKS)  # creates sqlite_sequence if the old schema had none
    found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
    seq = int(found[0]) if found else 0
    conn.execute(_COPY.format(id=id_column))
    conn.execute("DROP TABLE chunks")
    conn.execute("ALTER TABLE chunks_new RENAME TO chunks")
    kept = conn.execute(
        "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'chunks'", (seq,)
    )
    if not kept.rowcount and seq:  # no rows copied: the sequence must still survive
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('chunks', ?)", (seq,))
    conn.execute("DROP TABLE IF EXISTS arrays")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def _add_fields(store: StoreHandle) -> None:
    """Schema 3 -> 4: add the (empty) user fields table; nothing else changes."""
    conn = store._conn
    try:
        with store.transaction():
            conn.execute(fields.TABLE)
            keys = {"schema_version": SCHEMA_VERSION}
            if (
                conn.execute("SELECT 1 FROM manifest WHERE key = 'migrated_from'").fetchone()
                is None
            ):
                keys["migrated_from"] = 3
            conn.executemany(
                "INSERT OR REPLACE INTO manifest VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in keys.items()],
            )
            integrity.seal(conn)
    except sqlite3.DatabaseError as exc:
        raise _cannot(store, 3, exc) from exc


def _reclaim(conn: sqlite3.Connection) -> None:
    """Give the pages the old texts used back to the file system (best effort)."""
    with contextlib.suppress(sqlite3.DatabaseError):
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    docs = int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    n, tokens = conn.execute("SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks").fetchone()
    return {"documents": docs, "chunks": int(n), "tokens": int(tokens)}


def _cannot(store: StoreHandle, version: int, why: object) -> IndexMismatchError:
    return IndexMismatchError(
        f"index {store.folder} has schema version {version} and could not be upgraded to "
        f"{SCHEMA_VERSION} ({why}): rebuild it with `rm -r {store.folder} && ctxselect index "
        f"PATH... --index {store.folder}`"
    )

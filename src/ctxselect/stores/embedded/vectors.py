"""The index's own vector cache: embeddings by model and chunk content hash.

Dense retrieval embeds a chunk as its header and text; the key is the SHA-256 of that
(``ctxselect.embed.text_key``). Re-indexing looks every chunk up here first, so an
unchanged chunk (in a modified document, after a rename, on a rebuild with the same
chunking) is never embedded twice. Vectors are written every 1,024 chunks while an
index run embeds, in their own transactions, so an interrupted run keeps what it
embedded and the next run resumes from there. A full rebuild and every compaction
prune the cache to the live chunks of the current model. (A rowid table, not WITHOUT
ROWID: rows of ~1.5 KB would overflow a WITHOUT ROWID table's pages and take three
times the space.)
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

TABLE = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, key TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, key))
"""


class SQLiteVectorCache:
    """A ``VectorCache`` (see ``ctxselect.embed.cache``) in the index's SQLite file.

    Vectors are stored as float32 bytes; every vector of one model has the same length.
    """

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def _has_table(self) -> bool:
        found = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'"
        ).fetchone()
        return found is not None

    def get_many(self, model_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the stored vectors of ``model_id`` among ``keys``."""
        out: dict[str, np.ndarray] = {}
        with self._lock:
            if not self._has_table():
                return out  # an index written before the cache existed
            for part in _parts(list(keys)):
                rows = self._conn.execute(
                    f"SELECT key, vector FROM vectors WHERE model = ? AND key IN ({_marks(part)})",
                    [model_id, *part],
                )
                out.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        return out

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store ``vectors`` (key -> vector) of ``model_id`` in one transaction."""
        rows = [
            (model_id, key, np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for key, v in vectors.items()
        ]
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(TABLE)
                self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def prune(self, model_id: str, keep: Sequence[str]) -> int:
        """Delete every vector but those of ``model_id`` under ``keep``; return how many."""
        with self._lock:
            if not self._has_table():
                return 0
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "CREATE TEMP TABLE IF NOT EXISTS keep_keys (key TEXT PRIMARY KEY)"
                )
                self._conn.execute("DELETE FROM keep_keys")
                self._conn.executemany(
                    "INSERT OR IGNORE INTO keep_keys VALUES (?)", [(k,) for k in keep]
                )
                gone = self._conn.execute(
                    "DELETE FROM vectors WHERE model != ? "
                    "OR key NOT IN (SELECT key FROM keep_keys)",
                    (model_id,),
                ).rowcount
                self._conn.execute("DELETE FROM keep_keys")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return int(gone)

    def count(self, model_id: str | None = None) -> int:
        """Return how many vectors are stored (of ``model_id``, or of every model)."""
        with self._lock:
            if not self._has_table():
                return 0
            if model_id is None:
                return int(self._conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
            sql = "SELECT count(*) FROM vectors WHERE model = ?"
            return int(self._conn.execute(sql, (model_id,)).fetchone()[0])


def _parts(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _marks(part: Sequence[object]) -> str:
    return ",".join("?" * len(part))

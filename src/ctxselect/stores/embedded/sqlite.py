"""SQLiteStore: the embedded default, one folder holding the whole index.

``index.sqlite`` (WAL) holds the manifest, documents, chunks (offsets into their
document's text, which is stored once: see ``texts``), the small delta segments
(BLOBs) and the deletions since the last compaction; the base segment's big arrays are
``.npy`` files under ``arrays/`` (memory-mapped by readers), named by the manifest. Every
change commits in one SQLite transaction, so a killed writer leaves the last committed
state; readers never block and never see half a write. See docs/12-updates.md.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect.config import TEXTS_IN_MEMORY_MAX
from ctxselect.errors import (
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
)
from ctxselect.stores.base import Snapshot
from ctxselect.stores.embedded import disk, files, integrity, opening, reads
from ctxselect.stores.embedded.lock import LOCK_NAME, WriterLock, describe_holder
from ctxselect.stores.embedded.lookups import UNREADABLE, Lookups, guarded_read
from ctxselect.stores.embedded.rows import LazyRows, eager_table
from ctxselect.stores.embedded.schema import SCHEMA, SCHEMA_VERSION
from ctxselect.stores.embedded.vectors import SQLiteVectorCache
from ctxselect.stores.embedded.writes import Writes, local_commits
from ctxselect.types import ChunkTable, Rows, Segments

FILE_NAME = opening.FILE_NAME
# WAL + FULL: a commit is durable when COMMIT returns, power loss included (with NORMAL
# the last commits may roll back, and a base file deleted after them would be lost).
# It costs one WAL fsync per commit: +0.1-0.2 ms on a one-document update (docs/12).
SYNCHRONOUS = "FULL"


class SQLiteStore(Lookups, Writes):
    """An index in a folder: ``index.sqlite`` plus ``arrays/`` (see the module docstring).

    Args:
        folder: The index folder.
        create: Create the folder and file when missing; otherwise a missing index
            raises IndexNotFoundError naming the command that creates one.
        wait: Seconds to wait for the writer lock when a schema-1 index must be upgraded
            before it can be read (schemas 2 and 3 are upgraded by the first writer).
    """

    schema_version = SCHEMA_VERSION

    def __init__(
        self, folder: str | os.PathLike[str], *, create: bool = False, wait: float = 30.0
    ) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE_NAME
        self.uri = str(self.folder)  # what open_store takes back
        self._lock = threading.RLock()
        self.checksums = True  # compare stored checksums when reading (verify: off)
        if not self.path.is_file():
            if not create:
                raise IndexNotFoundError(opening.not_found(self.folder))
            opening.make_folder(self.folder)
        self.readonly = not opening.is_writable(self.folder, self.path)
        why = opening.check_not_truncated(self.folder, self.path)
        if why is not None:
            raise integrity.damaged(self.folder, self.path, why)
        self._conn = self._connect()
        self._opened_as = _file_identity(self.path)
        self._depth = 0
        self._check_version(wait)

    # -- opening -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.readonly:  # read-only media: no journal switch, no lock files
                conn = opening.connect_readonly(self.path)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except UNREADABLE as exc:
            raise self.corrupt(exc) from exc
        return conn

    def _check_version(self, wait: float) -> None:
        try:
            version = self._stored_version()
            if version is None:
                why = opening.empty_state(self._conn, self.folder)
                if why is not None:
                    raise integrity.damaged(self.folder, self.path, why)
                if self.readonly:
                    raise IndexNotFoundError(
                        f"index {self.folder} holds nothing yet (and is read-only): add "
                        f"documents with `ctxselect index PATH... --index {self.folder}`"
                    )
                opening.refuse_foreign(self.folder)  # an empty file among the user's files
                with self.transaction():
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            self._conn.execute(statement)
                    self._conn.execute(
                        "INSERT OR IGNORE INTO manifest VALUES ('schema_version', ?)",
                        (json.dumps(SCHEMA_VERSION),),
                    )
                    integrity.seal(self._conn)
                return
        except UNREADABLE as exc:
            raise self.corrupt(exc) from exc
        if version in (2, 3):  # read as it is: a search never writes the index; the
            # first writer upgrades it (``lock``). Schema 3 only lets chunks.text be NULL,
            # 4 only adds user fields (none here).
            self.schema_version = version
            return
        if version == 1:  # its arrays are inside SQLite, where no search reads them
            try:
                with WriterLock(self.folder, wait=wait):
                    self._upgrade()
            except IndexLockedError as exc:
                holder = describe_holder(self.folder / LOCK_NAME)
                raise IndexLockedError(
                    f"index {self.folder} has schema version 1 and must be upgraded before it "
                    f"can be read, but {holder} is writing it (waited {wait:g} s): run the "
                    f"command again once that process has finished"
                ) from exc
            return
        if version != SCHEMA_VERSION:
            newer = isinstance(version, int) and version > SCHEMA_VERSION
            hint = "upgrade ctxselect, or " if newer else ""
            raise IndexMismatchError(
                f"index {self.folder} has schema version {version}, this ctxselect reads "
                f"version {SCHEMA_VERSION}: {hint}rebuild it with "
                f"`rm -r {self.folder} && ctxselect index PATH... --index {self.folder}`"
            )

    def _upgrade(self) -> None:
        """Upgrade an older schema to the current one (the caller holds the writer lock)."""
        version = self._stored_version()
        if version in (1, 2, 3):
            from ctxselect.stores.embedded.migrate import upgrade

            upgrade(self, version)
        self.schema_version = SCHEMA_VERSION

    def upgrade_for_writing(self) -> None:
        """Bring an older index to the current schema before a write (writer lock held)."""
        if self.schema_version != SCHEMA_VERSION and not self.readonly:
            self._upgrade()

    def _stored_version(self) -> Any:
        has = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'manifest'"
        ).fetchone()
        if has is None:
            return None
        row = self._conn.execute("SELECT value FROM manifest WHERE key = 'schema_version'")
        found = row.fetchone()
        if found is None:
            return None
        try:
            return json.loads(found[0])
        except (TypeError, ValueError) as exc:
            why = "its schema version is not JSON"
            raise integrity.damaged(self.folder, self.path, why) from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes; nested calls join the outer transaction."""
        with self._lock:
            if self._depth == 0:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0 and self._conn.in_transaction:
                    # SQLite rolls back by itself on some errors (a full disk): a second
                    # ROLLBACK would raise and hide the error that matters
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if self._depth == 0:
                self._conn.execute("COMMIT")
                disk.current().committed(self._conn, self.path, durable=SYNCHRONOUS == "FULL")

    # -- manifest and counts (chunk and document reads: ``lookups``) --------------------

    @guarded_read
    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest as a dict of JSON values, checked (see ``integrity``).

        Raises:
            IndexCorruptError: The manifest is damaged, or it names no base segment
                although the index holds documents (a damaged index is never new).
        """
        with self._lock:
            rows = self._conn.execute("SELECT key, value FROM manifest").fetchall()
            manifest = integrity.parse_manifest(rows, self.folder)
            if manifest.get("base") is None and self._holds_data():
                raise integrity.damaged(
                    self.folder, self.path, "it holds documents but its manifest names no base"
                )
        return manifest

    def _holds_data(self) -> bool:
        found = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM chunks) OR EXISTS (SELECT 1 FROM documents)"
        )
        return bool(found.fetchone()[0])

    @guarded_read
    def data_version(self) -> int:
        """A number that changes when another connection commits (cheap: no file read)."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def replaced(self) -> bool:
        """Whether the index file opened is gone or another took its place (the folder
        deleted and built again while this store was open)."""
        return _file_identity(self.path) != self._opened_as

    @guarded_read
    def generation(self) -> int:
        """The committed generation: it grows by one with every commit."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM manifest WHERE key = 'generation'")
            found = row.fetchone()
        try:
            return int(json.loads(found[0])) if found else 0
        except (TypeError, ValueError) as exc:
            why = "its generation is not a number"
            raise integrity.damaged(self.folder, self.path, why) from exc

    @guarded_read
    def counts(self) -> dict[str, int]:
        """Return the number of documents, chunks and tokens (kept by every commit)."""
        counts = self.read_manifest().get("counts")
        if isinstance(counts, dict):
            return {k: int(counts.get(k, 0)) for k in ("documents", "chunks", "tokens")}
        with self._lock:
            docs = self._conn.execute("SELECT count(*) FROM documents").fetchone()[0]
            chunks, tokens = self._conn.execute(
                "SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks"
            ).fetchone()
        return {"documents": int(docs), "chunks": int(chunks), "tokens": int(tokens)}

    def disk_bytes(self) -> int:
        """Return the size of the index files on disk (SQLite, its WAL, the arrays)."""
        sqlite_bytes = sum(
            p.stat().st_size for p in self.folder.glob(f"{FILE_NAME}*") if p.is_file()
        )
        return sqlite_bytes + files.file_bytes(self.folder)

    # -- the committed state searches read ---------------------------------------------

    def snapshot(self, eager: bool | None = None, previous: Snapshot | None = None) -> Snapshot:
        """Return the last committed state: rows, and every mode's base and deltas.

        Args:
            eager: Keep every chunk's text in memory (default: when the index has at most
                ``TEXTS_IN_MEMORY_MAX`` chunks); otherwise texts are read per hit.
            previous: An earlier snapshot of this index; chunks it holds in memory are
                reused when the base is the same (only what changed since is read).

        Raises:
            IndexNotFoundError: Nothing was ever committed to this index.
        """
        seen = -1
        while True:
            try:
                return self._snapshot(eager, previous)
            except IndexNotFoundError:
                raise
            except FileNotFoundError as exc:
                now = self.generation()  # a compaction replaced the base meanwhile: re-read
                if now == seen:
                    raise IndexCorruptError(
                        f"index {self.folder} lacks its base arrays ({exc.filename}): run "
                        f"`ctxselect verify --index {self.folder}` and rebuild the index"
                    ) from exc
                seen = now
            except UNREADABLE as exc:
                raise self.corrupt(exc) from exc

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Pin every read inside to one committed generation (an SQLite read transaction).

        Re-entrant; hold it only as long as one search: an open read transaction keeps the
        WAL from being checkpointed.
        """
        with self._lock:
            if self._conn.in_transaction:
                yield
                return
            self._conn.execute("BEGIN")
            try:
                yield
            finally:
                self._conn.execute("COMMIT")

    def _snapshot(self, eager: bool | None, previous: Snapshot | None) -> Snapshot:
        with self.reading():
            manifest = self.read_manifest()
            base = manifest.get("base")
            if not isinstance(base, dict):
                raise IndexNotFoundError(
                    f"index {self.folder} holds nothing yet: add documents with "
                    f"`ctxselect index PATH... --index {self.folder}`"
                )
            base_arrays, base_rowids = files.load_base(self.folder, base, check=self.checksums)
            deltas, delta_rowids = reads.read_deltas(self, manifest)
            reads.check_structure(self, base, base_arrays, deltas)
            dead_ids, dead_terms = reads.read_dead(self, manifest)
            rowids = np.concatenate([base_rowids, *delta_rowids]).astype(np.int64)
            n_chunks = int(manifest.get("counts", {}).get("chunks", len(rowids)))
            keep = eager if eager is not None else n_chunks <= TEXTS_IN_MEMORY_MAX
            dead = np.flatnonzero(np.isin(rowids, dead_ids)) if len(dead_ids) else None
            reuse = None
            if (
                previous is not None
                and isinstance(previous.rows, ChunkTable)
                and previous.manifest.get("base") == base
            ):
                reuse = (previous.rowids, previous.rows)
            dead_rows = dead if dead is not None else np.zeros(0, np.int64)
            rows: Rows = (
                eager_table(
                    self._conn,
                    rowids,
                    len(base_rowids),
                    dead_rows,
                    reuse,
                    check=lambda found: integrity.check_chunks(self.folder, manifest, found),
                    folder=self.folder,
                )
                if keep
                else LazyRows(self._conn, self._lock, rowids, self.folder)
            )
        segments = {
            mode: Segments(
                base=arrays,
                deltas=tuple(d[mode] for d in deltas if mode in d),
                dead=dead,
                dead_terms=dead_terms.get(mode, {}),
            )
            for mode, arrays in base_arrays.items()
        }
        return Snapshot(int(manifest.get("generation", 0)), manifest, rows, segments, rowids)

    def vector_cache(self) -> SQLiteVectorCache:
        """The index's vectors by model and content hash (see ``stores.embedded.vectors``)."""
        return SQLiteVectorCache(self._conn, self._lock)

    @contextmanager
    def lock(self, wait: float = 0.0) -> Iterator[WriterLock]:
        """Hold the writer lock of this folder; an index of an older schema is upgraded
        once it is held (a search reads it as it is)."""
        with WriterLock(self.folder, wait=wait) as held:
            self.upgrade_for_writing()
            yield held

    def local_commits(self) -> int:
        """Return how many commits this process has made to any embedded index."""
        return local_commits()

    def verify(self) -> tuple[list[str], list[str], list[str]]:
        """Run every integrity check (``stores.embedded.verify``); return (checks run,
        problems, leftover files removed)."""
        from ctxselect.stores.embedded.verify import verify_store

        return verify_store(self)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``; None when it is not there."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino

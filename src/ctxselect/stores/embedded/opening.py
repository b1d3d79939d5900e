"""Opening an index file: read-only media, and telling a new index from a damaged one.

A reader must work where it cannot write (a read-only mount, a folder shared read-only):
such a folder is opened with SQLite's ``mode=ro`` and, when no WAL holds commits to
recover, ``immutable=1`` (no lock files are needed since nobody can write). A reader
never creates tables or switches the journal mode, both of which are writes.

A file SQLite sees as empty (0 bytes, or no tables) is a new index only when the folder
holds no other index file; an ``index.sqlite`` that lost its manifest table or its
schema version, beside documents or base files, is damaged, and nothing may overwrite it.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ctxselect.stores.embedded.files import ARRAYS_DIR


def is_writable(folder: Path, path: Path) -> bool:
    """True when this process may write the index folder and its file."""
    if not os.access(folder, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def check_not_truncated(folder: Path, path: Path) -> str | None:
    """Why a 0-byte index file is damaged (checked before SQLite writes a header to it)."""
    if path.is_file() and path.stat().st_size == 0:
        arrays = folder / ARRAYS_DIR
        if arrays.is_dir() and any(arrays.iterdir()):
            return f"it is empty but {arrays} holds index files"
    return None


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open ``path`` for reading only, without creating or writing any file."""
    wal = Path(f"{path}-wal")
    pending = wal.exists() and wal.stat().st_size > 0
    # immutable: nobody can write a read-only folder, so skip locks and the -shm file;
    # with a WAL to replay SQLite needs its shared memory, so only mode=ro then.
    flags = "mode=ro" if pending else "mode=ro&immutable=1"
    uri = f"file:{quote(str(path.resolve()))}?{flags}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def empty_state(conn: sqlite3.Connection, folder: Path) -> str | None:
    """Why an index file without a schema version is damaged; None when it is new.

    Call it only when the manifest holds no ``schema_version`` (or there is no manifest).
    """
    tables = {
        name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    } - {"sqlite_sequence"}
    if "manifest" in tables:
        return "its manifest has no schema version"
    if tables:
        return "it has tables but no manifest table"
    arrays = folder / ARRAYS_DIR
    if arrays.is_dir() and any(arrays.iterdir()):
        return f"it is empty but {arrays} holds index files"
    return None

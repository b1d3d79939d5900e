"""Opening an index file: read-only media, and telling a new index from a damaged one.

A reader must work where it cannot write (a read-only mount, a folder shared read-only):
such a folder is opened with SQLite's ``mode=ro`` and, when no WAL holds commits to
recover, ``immutable=1`` (no lock files are needed since nobody can write). A reader
never creates tables or switches the journal mode, both of which are writes.

A file SQLite sees as empty (0 bytes, or no tables) is a new index only when the folder
holds no other index file; an ``index.sqlite`` that lost its manifest table or its
schema version, beside documents or base files, is damaged, and nothing may overwrite it.
A folder that holds other files and no index is not an index at all: it is refused before
anything is written to it (the advice never deletes a folder the store did not make).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ctxselect.errors import ConfigError, IndexCorruptError, IndexWriteError
from ctxselect.stores.embedded import disk
from ctxselect.stores.embedded.files import ARRAYS_DIR, foreign_files
from ctxselect.stores.embedded.lock import LOCK_NAME

FILE_NAME = "index.sqlite"
# What the store itself puts in an index folder (the SQLite file with its WAL and shared
# memory, the lock file, the base files' folder): a folder holding anything else and no
# index is the user's, never a new index.
_OWN_ENTRIES = {FILE_NAME, f"{FILE_NAME}-wal", f"{FILE_NAME}-shm", f"{FILE_NAME}-journal"}
_OWN_ENTRIES |= {LOCK_NAME, ARRAYS_DIR}
# ctxselect's own folders beside the default index ./.ctxselect: eval and sweep indexes
# (api/evaluate.py, api/sweep_setup.py) may be made there before the index itself.
_OWN_FOLDERS = {"eval", "sweeps"}
_SHOW = 3


def is_writable(folder: Path, path: Path) -> bool:
    """True when this process may write the index folder and its file."""
    if not os.access(folder, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def check_not_truncated(folder: Path, path: Path) -> str | None:
    """Why a 0-byte index file is damaged (checked before SQLite writes a header to it).

    Raises:
        ConfigError: The folder holds files that are not an index's (see ``refuse_foreign``).
    """
    if path.is_file() and path.stat().st_size == 0:
        if holds_base_files(folder):
            return f"it is empty but {folder / ARRAYS_DIR} holds index files"
        refuse_foreign(folder)  # an empty file among the user's: not an index, kept as is
    return None


def holds_base_files(folder: Path) -> bool:
    """True when ``arrays/`` holds a file the store wrote (a base file or its temporary)."""
    arrays = folder / ARRAYS_DIR
    if not arrays.is_dir():
        return False
    foreign = set(foreign_files(folder))
    return any(f"{ARRAYS_DIR}/{e.name}" not in foreign for e in arrays.iterdir())


def make_folder(folder: Path) -> None:
    """Make the folder of a new index, once it is known to be one (nothing is made else).

    Raises:
        ConfigError: ``folder`` is a file, or holds files that are not an index's.
        IndexCorruptError: Base files are there but the index file is gone.
        IndexWriteError: The folder cannot be created (permissions, no such place).
    """
    check_new_folder(folder)
    if holds_base_files(folder):  # an index that lost its file
        raise IndexCorruptError(
            f"index {folder} lost its {FILE_NAME}: its base files alone cannot be "
            f"searched: restore the file from a backup, or rebuild the index with "
            f"`rm -r {folder} && ctxselect index PATH... --index {folder}`"
        )
    try:
        disk.make_dirs(folder)
    except OSError as exc:
        raise IndexWriteError(
            f"cannot create index folder {folder}: {exc.strerror or exc}: give --index a "
            f"folder in a place this user can write"
        ) from exc


def check_new_folder(folder: Path) -> None:
    """Refuse to make a new index in ``folder`` when it is not a folder, or holds files
    that are not an index's (checked before anything is created).

    Raises:
        ConfigError: ``folder`` (or a parent) is a file, or it holds other files.
    """
    probe = folder
    while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(
            f"cannot make an index in {folder}: {probe} is a file, not a folder: give "
            f"--index a folder (a new or empty one; ctxselect creates it)"
        )
    refuse_foreign(folder)


def refuse_foreign(folder: Path) -> None:
    """Raise when ``folder`` (which holds no index) holds files an index does not have.

    Raises:
        ConfigError: Naming what the folder holds, and suggesting a new folder.
    """
    if not folder.is_dir():
        return
    found = sorted(
        e.name
        for e in folder.iterdir()
        if e.name not in _OWN_ENTRIES and not (e.name in _OWN_FOLDERS and e.is_dir())
    )
    found += foreign_files(folder)
    if found:
        shown = ", ".join(found[:_SHOW]) + (", ..." if len(found) > _SHOW else "")
        raise ConfigError(
            f"{folder} is not a ctxselect index: it holds {len(found)} other file(s) "
            f"({shown}) and no index, and an index is never made among other files: give "
            f"--index a new or empty folder (e.g. {folder / '.ctxselect'})"
        )


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
    if holds_base_files(folder):
        return f"it is empty but {folder / ARRAYS_DIR} holds index files"
    return None


def not_found(folder: Path) -> str:
    """Why there is no index at ``folder``, and the command that makes one."""
    if folder.exists() and not folder.is_dir():
        return (
            f"no index at {folder}: it is a file, not an index folder: give --index the "
            f"folder `ctxselect index` made (or a new folder to make one in)"
        )
    return f"no index at {folder}: create one with `ctxselect index PATH... --index {folder}`"

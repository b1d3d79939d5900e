"""Base-segment arrays in one file beside the SQLite file: mmap-able, written atomically.

A base segment is one file ``arrays/base-<generation>-<token>.bin`` holding every mode's
arrays back to back (64-byte aligned); the manifest records each array's dtype, shape and
offset. One file means one fsync per compaction, and readers map it once and slice it
without copying. The file is written under a temporary name, flushed to disk, renamed and
its directory flushed (``disk.write_durably``), and only becomes part of the index when the
manifest naming it commits (one SQLite transaction). Files no committed manifest names are
leftovers of an interrupted write; a writer removes them while it holds the lock, once that
manifest is durable. Only names this store writes (``base-<generation>-<token>.bin`` and
its ``.tmp``) are ever deleted: any other file under ``arrays/`` is not the store's, and is
named (:func:`foreign_files`) and left alone. The base a compaction or rebuild replaced is
kept until the next one, so a reader that read the previous manifest can still map it
(and readers keep their mappings: removing a mapped file is safe on POSIX).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import re
import secrets
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect.errors import IndexAccessError, IndexCorruptError, IndexWriteError
from ctxselect.stores.embedded import base_check, disk, integrity

ARRAYS_DIR = disk.ARRAYS_DIR
# Every name new_base_name gives (and its temporary twin, see disk.write_durably): the
# only files a sweep may delete.
_OWN_NAME = re.compile(r"base-\d{6,}-[0-9a-f]{8}\.bin(\.tmp)?")
_ALIGN = 64
# Arrays up to this size are compared by value when deduplicating (vocabularies built
# twice for modes sharing an analysis); bigger ones only by identity.
_DEDUPE_BYTES = 64 << 20


def new_base_name(generation: int) -> str:
    """Return a fresh base file name (relative to the index folder) for ``generation``."""
    return f"{ARRAYS_DIR}/base-{generation:06d}-{secrets.token_hex(4)}.bin"


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:
        return True
    small = a.nbytes <= _DEDUPE_BYTES
    return small and a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def _pack(
    arrays: Mapping[str, Mapping[str, np.ndarray]], rowids: np.ndarray
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Lay arrays out back to back; identical arrays (shared analyses) are stored once."""
    stored: list[np.ndarray] = []
    layout: dict[str, list[Any]] = {}
    offset = 0

    def place(array: np.ndarray, key: str) -> str:
        nonlocal offset
        for i, other in enumerate(stored):
            if _same(array, other):
                return list(layout)[i]
        a = np.ascontiguousarray(array)
        offset = -(-offset // _ALIGN) * _ALIGN
        layout[key] = [a.dtype.str, list(a.shape), offset]
        stored.append(a)
        offset += a.nbytes
        return key

    names = {
        mode: {name: place(array, f"{mode}.{name}") for name, array in named.items()}
        for mode, named in arrays.items()
    }
    rowid_key = place(np.asarray(rowids, dtype=np.int64), "rowids")
    return stored, {"arrays": names, "layout": layout, "rowids": rowid_key}


def write_base(
    folder: Path, rel: str, arrays: Mapping[str, Mapping[str, np.ndarray]], rowids: np.ndarray
) -> dict[str, Any]:
    """Write every mode's arrays and the row ids to ``folder/rel``; return its layout.

    Raises:
        IndexWriteError: The disk is full or the file could not be written; the partial
            file is removed and the index keeps its last committed state.
    """
    target = folder / rel
    stored, layout = _pack(arrays, rowids)

    def fill(handle: Any) -> None:
        position = 0
        for array, (_, _, offset) in zip(stored, layout["layout"].values(), strict=True):
            handle.write(b"\0" * (offset - position))
            write_array(handle, array)
            position = offset + array.nbytes

    try:
        # file fsynced, renamed, directory fsynced: durable before the commit naming it
        disk.write_durably(target, fill)
    except OSError as exc:
        with contextlib.suppress(OSError):
            disk.current().unlink(target)
        raise write_error(folder, exc) from exc
    written = {"file": rel, "rows": len(rowids), **layout, "crc32": _crc(stored, layout)}
    # a later write that finds the file as stamped need not read it (base_check); with
    # no stamp, it reads the file once to compare its checksum
    with contextlib.suppress(OSError):
        written[base_check.STAMP_KEY] = base_check.stamp(target)
    return written


def _crc(stored: list[np.ndarray], layout: Mapping[str, Any]) -> int:
    """CRC-32 of the bytes :func:`write_base` writes (padding included), from memory."""
    crc = position = 0
    for array, (_, _, offset) in zip(stored, layout["layout"].values(), strict=True):
        crc = zlib.crc32(b"\0" * (offset - position), crc)
        if array.nbytes:
            crc = zlib.crc32(array.data, crc)
        position = offset + array.nbytes
    return crc


def write_array(handle: Any, array: np.ndarray) -> None:
    """Write an array's bytes (one place, so tests can simulate a full disk)."""
    if array.nbytes:
        handle.write(array.data)


def write_error(folder: Path, exc: BaseException) -> IndexWriteError:
    """Turn an OS or SQLite failure during a write into a one-line IndexWriteError."""
    reason = str(exc) or type(exc).__name__
    fix = "free space (or fix the cause)"
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "full" in reason:
        reason = "the disk is full"
    elif (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)) or (
        "readonly" in reason or "read-only" in reason
    ):
        fix = f"give this user write permission on {folder} and the files in it"
    return IndexWriteError(
        f"could not write index {folder}: {reason}; the index keeps its last committed "
        f"state: {fix} and run the command again"
    )


def load_base(
    folder: Path, base: Mapping[str, Any], *, check: bool = True
) -> tuple[dict[str, dict[str, np.ndarray]], np.ndarray]:
    """Map a base file read-only; return each mode's arrays and the row ids (no copies).

    With ``check``, the file's bytes are compared with the manifest's CRC-32 (once per
    process); ``verify`` turns it off to check the arrays' structure too.

    Raises:
        FileNotFoundError: The file is gone (a newer compaction replaced it: re-read).
        IndexAccessError: This user may not read the file.
        IndexCorruptError: The file is shorter than its layout or the layout is invalid.
    """
    path = folder / str(base["file"])
    try:
        handle = open(path, "rb")  # noqa: SIM115  (closed just below, once mapped)
    except PermissionError as exc:
        raise IndexAccessError(
            f"cannot read {path}: permission denied; the index is not damaged: give this "
            f"user read permission on {folder} and the files in it"
        ) from exc
    with handle:
        size = os.fstat(handle.fileno()).st_size
        buffer: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    if check:
        integrity.check_file(folder, path, base.get("crc32"))
    views: dict[str, np.ndarray] = {}
    try:
        for key, (dtype, shape, offset) in base["layout"].items():
            dt = np.dtype(dtype)
            count = int(np.prod(shape)) if shape else 1
            if offset + count * dt.itemsize > size:
                raise ValueError(f"array {key} ends past the end of the file")
            flat = np.frombuffer(buffer, dtype=dt, count=count, offset=offset)
            views[key] = flat.reshape(shape)
        arrays = {
            mode: {name: views[key] for name, key in named.items()}
            for mode, named in base["arrays"].items()
        }
        return arrays, views[base["rowids"]]
    except (KeyError, ValueError, TypeError) as exc:
        raise IndexCorruptError(
            f"{path} is damaged ({exc}): run `ctxselect verify --index {folder}` and "
            f"rebuild it in place with `ctxselect index --rebuild --index {folder}`"
        ) from exc


def remove_orphans(folder: Path, keep: set[str] | None) -> list[str]:
    """Delete base files other than ``keep`` (paths like ``arrays/NAME``); return them.

    Only files named as this store names its base files (or their temporary twins) are
    deleted; anything else is not the store's and stays (see :func:`foreign_files`).
    Only a writer holding the lock may call this.
    """
    removed = []
    for entry in _own_files(folder):
        rel = f"{ARRAYS_DIR}/{entry.name}"
        if keep and rel in keep:
            continue
        disk.current().unlink(entry)
        removed.append(rel)
    return removed


def _own_files(folder: Path) -> list[Path]:
    root = folder / ARRAYS_DIR
    if not root.is_dir():
        return []
    return [e for e in sorted(root.iterdir()) if _OWN_NAME.fullmatch(e.name) and e.is_file()]


def foreign_files(folder: Path) -> list[str]:
    """Entries under ``folder/arrays`` this store did not write (never deleted), sorted."""
    root = folder / ARRAYS_DIR
    if not root.is_dir():
        return []
    own = set(_own_files(folder))
    return [f"{ARRAYS_DIR}/{e.name}" for e in sorted(root.iterdir()) if e not in own]


def file_bytes(folder: Path) -> int:
    """Return the total size of the files under ``folder/arrays``."""
    root = folder / ARRAYS_DIR
    if not root.exists():
        return 0
    return sum(p.stat().st_size for p in root.iterdir() if p.is_file())

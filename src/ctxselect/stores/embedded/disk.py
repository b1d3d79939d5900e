"""Every step an index write takes on disk, in one place: write, fsync, rename, unlink.

The embedded store never touches its files through ``os`` directly; it calls the
:class:`Disk` returned by :func:`current`. That keeps the order of durable steps in one
readable place, and lets a test swap in a simulated disk that records each step and, at
a simulated power cut, drops every step not yet made durable
(``tests/stores/test_stores_power_loss.py``).

The order that makes an index survive a power cut (docs/12-updates.md, "Crash safety"):

1. a new file is written under a temporary name and fsynced, renamed, and its directory
   fsynced (a new directory's parent too) before the SQLite commit that names it;
2. SQLite commits with ``synchronous=FULL``: in WAL mode a commit is durable when COMMIT
   returns (with ``NORMAL`` the last commits can roll back at a power cut);
3. a file is deleted only after the manifest that stopped naming it is durable.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

ARRAYS_DIR = "arrays"
"""The folder of an index's array files (base and delta segments), beside index.sqlite."""


class Disk:
    """The real disk: each method is one POSIX step (a simulated disk overrides them)."""

    def write_file(self, path: Path, write: Callable[[BinaryIO], None]) -> None:
        """Create ``path`` (replacing it), fill it with ``write(handle)`` and fsync it."""
        with open(path, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())

    def replace(self, source: Path, target: Path) -> None:
        """Rename ``source`` to ``target`` atomically (durable once the directory is)."""
        os.replace(source, target)

    def fsync_dir(self, path: Path) -> None:
        """Make the entries of directory ``path`` (creations, renames, unlinks) durable."""
        if os.name == "nt":  # NTFS journals its metadata; a directory cannot be opened
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def mkdir(self, path: Path) -> None:
        """Create directory ``path`` (its parent exists; durable once the parent is)."""
        path.mkdir()

    def unlink(self, path: Path) -> None:
        """Delete file ``path`` if it exists."""
        path.unlink(missing_ok=True)

    def remove_tree(self, path: Path) -> None:
        """Delete directory ``path`` and everything under it."""
        shutil.rmtree(path, ignore_errors=True)

    def committed(self, conn: sqlite3.Connection, path: Path, *, durable: bool) -> None:
        """Called after each commit of the index database ``path`` on ``conn``.

        ``durable`` says whether the commit (and every earlier one) survives a power
        cut: a ``synchronous=FULL`` commit, or a checkpoint that copied every commit into
        the database file. SQLite made it so; the real disk has nothing left to do.
        """


_CURRENT: list[Disk] = [Disk()]


def current() -> Disk:
    """Return the disk index writes go through (the real one unless a test swapped it)."""
    return _CURRENT[0]


@contextlib.contextmanager
def using(disk: Disk) -> Iterator[Disk]:
    """Route every index write through ``disk`` inside the block (for tests)."""
    before = _CURRENT[0]
    _CURRENT[0] = disk
    try:
        yield disk
    finally:
        _CURRENT[0] = before


def make_dirs(path: Path) -> None:
    """Create ``path`` and any missing parents, each made durable in its parent."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    disk = current()
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            disk.mkdir(new)
        disk.fsync_dir(new.parent)


def write_durably(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write a new file so that it is complete and durable before anything names it.

    The bytes go to ``path.tmp`` and are fsynced, the file is renamed to ``path`` and the
    directory fsynced (it is created first if missing, its parent fsynced too). On an
    error the temporary file is removed and the error raised.
    """
    disk = current()
    tmp = path.with_name(path.name + ".tmp")
    try:
        make_dirs(path.parent)
        disk.write_file(tmp, write)
        disk.replace(tmp, path)
        disk.fsync_dir(path.parent)
    except OSError:
        with contextlib.suppress(OSError):
            disk.unlink(tmp)
        raise

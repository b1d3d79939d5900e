"""A simulated disk for power-cut tests: it records every durable step an index write takes.

:class:`RecordingDisk` is a :class:`~ctxselect.stores.embedded.disk.Disk` that performs
each operation on the real file system (so the writes run as usual) and appends it to a
log. :func:`materialize` replays the first ``i`` operations of the log on a model of a
POSIX file system and writes out what a power cut right then would leave:

- a file's bytes survive only if it was fsynced after they were written; otherwise it is
  truncated (to nothing or to a random prefix);
- a directory entry (create, rename, unlink, mkdir) survives only if its directory was
  fsynced afterwards (variant ``"drop"``), or, the adversarial case of a journaling file
  system that committed the metadata but not the data, every entry operation survives
  (variant ``"meta"``);
- ``index.sqlite`` is at its last durable commit (SQLite's documented WAL guarantee:
  with ``synchronous=FULL`` a commit is durable when COMMIT returns; with ``NORMAL`` only
  once a checkpoint copied it, e.g. when the last connection closes).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ctxselect.stores.embedded.disk import Disk

DB = "index.sqlite"


@dataclass(frozen=True, slots=True)
class Op:
    """One logged operation: kind, path (relative to the disk root), extra data, step."""

    kind: str
    path: str
    extra: Any
    step: int


class RecordingDisk(Disk):
    """The real disk, logging each operation under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ops: list[Op] = []
        self.step = 0

    def _log(self, kind: str, path: Path, extra: Any = None) -> None:
        self.ops.append(Op(kind, path.relative_to(self.root).as_posix(), extra, self.step))

    def write_file(self, path: Path, write: Callable[[BinaryIO], None]) -> None:
        super().write_file(path, write)
        self._log("write", path, path.read_bytes())
        self._log("fsync", path)

    def replace(self, source: Path, target: Path) -> None:
        super().replace(source, target)
        self._log("rename", source, target.relative_to(self.root).as_posix())

    def fsync_dir(self, path: Path) -> None:
        super().fsync_dir(path)
        self._log("fsync_dir", path)

    def mkdir(self, path: Path) -> None:
        super().mkdir(path)
        self._log("mkdir", path)

    def unlink(self, path: Path) -> None:
        existed = path.exists()
        super().unlink(path)
        if existed:
            self._log("unlink", path)

    def remove_tree(self, path: Path) -> None:
        super().remove_tree(path)
        self._log("rmtree", path)

    def committed(self, conn: sqlite3.Connection, path: Path, *, durable: bool) -> None:
        copy = sqlite3.connect(":memory:")
        try:
            conn.backup(copy)
            image = copy.serialize()
        finally:
            copy.close()
        self._log("commit", path, (image, durable))

    def closed(self, path: Path) -> None:
        """Log that the last connection closed: SQLite checkpointed and removed the WAL."""
        if not path.with_name(path.name + "-wal").exists():
            self._log("checkpoint", path)


@dataclass
class _Model:
    """Volatile and durable views of a file system (paths relative to the disk root)."""

    names: dict[str, int] = field(default_factory=dict)
    durable_names: dict[str, int] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=lambda: {"."})
    durable_dirs: set[str] = field(default_factory=lambda: {"."})
    data: dict[int, bytes] = field(default_factory=dict)
    durable_data: dict[int, bytes | None] = field(default_factory=dict)
    db: tuple[int, bytes] | None = None  # (op index of the commit, image)
    durable_db: tuple[int, bytes] | None = None

    def apply(self, i: int, op: Op) -> None:
        kind, path = op.kind, op.path
        if kind == "write":
            inode = len(self.data)
            self.names[path], self.data[inode], self.durable_data[inode] = inode, op.extra, None
        elif kind == "fsync":
            self.durable_data[self.names[path]] = self.data[self.names[path]]
        elif kind == "rename":
            self.names[op.extra] = self.names.pop(path)
        elif kind == "unlink":
            self.names.pop(path, None)
        elif kind == "rmtree":
            self.dirs.discard(path)
            self.names = {p: n for p, n in self.names.items() if not p.startswith(path + "/")}
        elif kind == "mkdir":
            self.dirs.add(path)
        elif kind == "fsync_dir":
            self._sync_dir(path)
        elif kind == "commit":
            image, durable = op.extra
            self.db = (i, image)
            if durable:
                self.durable_db = self.db
        elif kind == "checkpoint":
            self.durable_db = self.db

    def _sync_dir(self, folder: str) -> None:
        def inside(p: str) -> bool:
            return _parent(p) == folder

        self.durable_names = {p: n for p, n in self.durable_names.items() if not inside(p)}
        self.durable_names.update({p: n for p, n in self.names.items() if inside(p)})
        self.durable_dirs = {d for d in self.durable_dirs if not inside(d)} | {
            d for d in self.dirs if inside(d)
        }


def _parent(path: str) -> str:
    return path.rpartition("/")[0] or "."


def replay(ops: list[Op], upto: int) -> _Model:
    """The model after the first ``upto`` operations."""
    model = _Model()
    for i, op in enumerate(ops[:upto]):
        model.apply(i, op)
    return model


def materialize(
    ops: list[Op], upto: int, variant: str, target: Path, rng: random.Random
) -> int | None:
    """Write to ``target`` what a power cut after ``upto`` operations leaves on disk.

    ``variant`` is ``"drop"``, ``"meta"`` (see the module docstring) or ``"live"`` (no
    power cut: what the running process saw). Returns the op index of the commit the
    database is at (None: no database survived).
    """
    model = replay(ops, upto)
    live = variant == "live"
    dirs = model.dirs if live or variant == "meta" else model.durable_dirs
    names = model.names if live or variant == "meta" else model.durable_names
    target.mkdir(parents=True)
    for folder in sorted(dirs, key=len):
        if folder == "." or _reachable(folder, dirs):
            (target / folder).mkdir(parents=True, exist_ok=True)
    for path, inode in sorted(names.items()):
        if not _reachable(_parent(path), dirs):
            continue
        content = model.data[inode] if live else model.durable_data[inode]
        if content is None:  # never fsynced: lost or torn
            full = model.data[inode]
            content = full[: rng.choice([0, rng.randrange(len(full) + 1)])]
        (target / path).write_bytes(content)
    db = model.db if live else model.durable_db
    if db is None:
        return None
    for path in ops_db_paths(ops):
        if _reachable(_parent(path), dirs):
            (target / path).write_bytes(db[1])
    return db[0]


def ops_db_paths(ops: list[Op]) -> set[str]:
    """The database files the log committed to."""
    return {op.path for op in ops if op.kind == "commit"}


def _reachable(folder: str, dirs: set[str]) -> bool:
    while folder != ".":
        if folder not in dirs:
            return False
        folder = _parent(folder)
    return True

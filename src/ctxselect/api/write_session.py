"""Opening an index for one write: the writer lock, and undoing a failed first write.

Every write verb of ``api.write`` runs inside :func:`writing`. A first write into a new
folder that fails removes what it made (:class:`MadeHere`), holding the lock; a writer
that opened the same new index meanwhile notices that its files are gone
(:meth:`Opened.current`) and opens the folder again, so nothing it writes is lost.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Callable, Iterator

from ctxselect.config import WAIT, resolve_index_dir
from ctxselect.errors import IndexNotFoundError, IndexWriteError
from ctxselect.stores import Store, open_store
from ctxselect.stores.open import DEFAULT_WAIT, split_uri

PathArg = str | os.PathLike[str]

# The files the folder store keeps in an index folder: its SQLite file, the writer lock
# and the base files' folder. They mirror the store's own names (composition code may
# not import the store, tests/test_architecture.py); a test checks that they agree.
INDEX_FILE, LOCK_FILE, ARRAYS_DIR = "index.sqlite", "write.lock", "arrays"


@dataclasses.dataclass(frozen=True, slots=True)
class MadeHere:
    """What an index folder held before a write created an index in it, to undo that."""

    folder: str
    existed: bool
    entries: frozenset[str]

    @classmethod
    def before(cls, index: str) -> MadeHere:
        """Note the folder ``index`` (a path; a ``scheme://`` URI is never undone)."""
        scheme, folder = split_uri(index)
        if scheme != "file":
            return cls("", True, frozenset())
        existed = os.path.isdir(folder)
        return cls(folder, existed, frozenset(os.listdir(folder)) if existed else frozenset())

    def undo_if_empty(self, store: Store) -> None:
        """Close ``store`` and remove the index files made since :meth:`before` (the
        folder too, if it was made and is then empty), unless the store kept something a
        resumed run reuses: documents or embedded vectors. A first write that failed
        (workers that could not start, ...) then leaves nothing behind.

        The caller holds the writer lock, so the check sees every commit and nobody
        writes meanwhile. Only the store's own files go (a file another process put in
        the folder stays), the lock file last, still held: a writer that opened the index
        or waits for its lock meanwhile finds it gone (:meth:`Opened.current`) and opens
        the folder afresh, so nothing it writes is removed.
        """
        if not self.folder or store.counts()["documents"]:
            return
        count = getattr(store.vector_cache(), "count", None)
        if not callable(count) or count():
            return
        store.close()
        for name in _UNDO_ORDER:
            path = os.path.join(self.folder, name)
            if name in self.entries:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):  # gone, or held open (Windows)
                    os.unlink(path)
        if not self.existed:
            with contextlib.suppress(OSError):  # not empty: something else wrote there
                os.rmdir(self.folder)


# The index file goes after its journal, WAL and shared memory (a new index file made
# in its place must not pick up the old ones), and before the lock file, which goes last
# while still held: a writer that opened the old index file opened the old lock file too.
_UNDO_ORDER = (
    *(f"{INDEX_FILE}-{suffix}" for suffix in ("journal", "wal", "shm")),
    ARRAYS_DIR,
    INDEX_FILE,
    LOCK_FILE,
)


REOPENS = 5
"""How often one write opens its index again when another process's failed first write
removed the new index it had opened (:meth:`Opened.current`)."""


def file_id(path: str) -> tuple[int, int] | None:
    """The identity (device, inode) of the file at ``path``, or None if there is none."""
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # no file, or its folder is a file
        return None
    return stat.st_dev, stat.st_ino


@dataclasses.dataclass(frozen=True, slots=True)
class Opened:
    """A store opened for one write, with what to undo if it is new and the write fails.

    ``paths`` are its index file and lock file (none for a ``scheme://`` index) and
    ``ids`` their identities when opened.
    """

    store: Store
    made: MadeHere | None
    paths: tuple[str, ...]
    ids: tuple[tuple[int, int] | None, ...]

    def current(self) -> bool:
        """True while the folder still holds the index and lock files this write opened.

        A failed first write of another process removes a new index (:class:`MadeHere`)
        while this one may wait for its lock; the files it holds are then not the
        folder's, and what it wrote there would be lost.
        """
        return tuple(file_id(p) for p in self.paths) == self.ids


def open_for_write(
    folder: str,
    wait: float,
    *,
    create: bool,
    before_create: Callable[[str], None],
) -> Opened | None:
    """Open the index in ``folder`` for one write (created if missing and ``create``).

    ``before_create(folder)`` runs before a missing index is made. Returns None (the
    store closed) when the index file was replaced while it was opened: open it again.
    """
    scheme, path = split_uri(folder)
    files = (os.path.join(path, INDEX_FILE), os.path.join(path, LOCK_FILE))
    before = file_id(files[0]) if scheme == "file" else None
    made: MadeHere | None = None
    try:
        store = open_store(folder, wait=max(wait, DEFAULT_WAIT))
    except IndexNotFoundError:
        if not create:
            raise
        before_create(folder)
        made = MadeHere.before(folder)
        store = open_store(folder, create=True, wait=max(wait, DEFAULT_WAIT))
    if scheme != "file":
        return Opened(store, made, (), ())
    with contextlib.suppress(OSError):  # made now, so its identity is the one locked
        os.close(os.open(files[1], os.O_RDWR | os.O_CREAT, 0o644))
    ids = (file_id(files[0]), file_id(files[1]))
    if before is not None and ids[0] != before:
        store.close()
        return None
    return Opened(store, made, files, ids)


@contextlib.contextmanager
def writing(
    index: PathArg | None,
    wait: float,
    *,
    create: bool = True,
    before_create: Callable[[str], None] | None = None,
) -> Iterator[Store]:
    """Open an index folder (created if missing, unless ``create`` is False) and hold its
    writer lock for one write; the store is closed afterwards.

    ``before_create(folder)`` runs (once) before a missing index is made: an error it
    raises (a bad path, no paths) leaves nothing behind. When the failed first write of
    another process removed the new index this one waited on, the folder is opened again.
    """
    WAIT.check(wait)
    folder = resolve_index_dir(index)
    checked: list[str] = []

    def check_once(uri: str) -> None:
        if before_create is not None and not checked:
            before_create(uri)
        checked.append(uri)

    for _ in range(REOPENS):
        opened = open_for_write(folder, wait, create=create, before_create=check_once)
        if opened is None:
            continue
        with contextlib.ExitStack() as stack:
            stack.callback(opened.store.close)
            try:
                stack.enter_context(opened.store.lock(wait))
            except IndexWriteError:  # the folder itself was removed: open it again
                if opened.current():
                    raise
                continue
            if not opened.current():
                continue
            try:
                yield opened.store
            except BaseException:
                if opened.made is not None:  # a new index whose first write failed
                    opened.made.undo_if_empty(opened.store)
                raise
            return
    raise IndexWriteError(
        f"index {folder} was removed {REOPENS} times while this write waited for "
        f"it (another process's first write into it kept failing), so nothing was "
        f"written: see that process's error, then run the command again"
    )

"""Find the files to load under the given roots, applying the ignore rules.

Rules, in order: hidden names (leading ``.``) are ignored; ``.gitignore`` and
``.ctxselectignore`` patterns apply with git semantics, those of the enclosing git work tree
above a root included (:mod:`ctxselect.ingest.ignore_rules`); junk folders
(``__pycache__``, ``node_modules``, ``*.egg-info``, virtualenvs) are ignored; a folder
reached twice (symlink loops or two links to one folder) is entered once; the folders the
scanner is told to skip (the index being written, when it lies under a root) are never
entered, whatever their name, and neither is any other ctxselect index folder met below a
root (one holding both ``index.sqlite`` and ``write.lock``, the files every index write
leaves). A BEIR dataset folder contributes only its ``corpus.jsonl``.

Symlinks: one whose resolved target lies outside the roots is not followed unless the
scanner is told to (``follow_symlinks``), and each one skipped is named in the report.
A folder link whose target is inside the roots is walked last, and only if that folder
was not walked already, so its files keep the ids of their real place and are never
indexed twice. Likewise a file link whose target is inside the roots is ignored (counted
in ``ignored``): the target is indexed once, under the id of its real place. A name that
is not valid UTF-8 (possible on Linux) cannot be stored as a document id: it is skipped
and named, with its bad bytes as ``\\xff`` escapes.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxselect.ingest.beir import looks_like_beir
from ctxselect.ingest.ignore_rules import Rules, enclosing_rules, ignored, with_ignore_files
from ctxselect.ingest.kinds import kind_of
from ctxselect.ingest.report import Tally

if TYPE_CHECKING:
    pass

# The files an embedded ctxselect index folder always holds once written (its database,
# stores/embedded/opening.py, and its writer lock, stores/embedded/lock.py): ingest
# imports no store, so the names are repeated here.
INDEX_MARKERS = ("index.sqlite", "write.lock")
JUNK_DIRS = frozenset({"__pycache__", "node_modules", "__pypackages__", "bower_components"})
BEIR_CORPUS = "corpus.jsonl"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file that passed the ignore rules and has a loader.

    Attributes:
        path: Path to open, as the user gave the root plus the folders below it.
        doc_id: ``/``-separated id relative to the common base folder.
        kind: Loader kind from :func:`ctxselect.ingest.kinds.kind_of`.
        size: Size in bytes when scanned.
        explicit: The user named this file (not found by walking a folder): a bad line
            of a BEIR corpus is then an error rather than a skipped line.
    """

    path: str
    doc_id: str
    kind: str
    size: int
    explicit: bool = False


def list_dir(path: str) -> list[os.DirEntry[str]]:
    """Return the entries of folder ``path`` sorted by name (the walk is deterministic)."""
    with os.scandir(path) as entries:
        return sorted(entries, key=lambda e: e.name)


def describe_os_error(exc: OSError, *, symlink: bool = False) -> str:
    """Turn an OSError into the short reason shown in the report."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if isinstance(exc, FileNotFoundError):
        return "broken symlink" if symlink else "vanished during the scan"
    return exc.strerror or type(exc).__name__


def inside(real: str, real_roots: Sequence[str]) -> bool:
    """Tell whether the resolved path ``real`` is one of ``real_roots`` or lies below one."""
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in real_roots)


def valid_name(name: str) -> bool:
    """Tell whether a file name decoded from the file system is valid UTF-8 (no escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 decode to lone surrogates
        return False
    return True


def printable(path: str) -> str:
    """``path`` with bytes that are not valid UTF-8 shown as ``\\xff`` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def other_unicode_form(path: str) -> str | None:
    """A sibling of missing ``path`` whose name is the same text in another Unicode form.

    ``é`` is one code point (NFC, what keyboards type) or ``e`` plus a combining accent
    (NFD, what macOS file systems and archives made there write); Linux keeps the bytes,
    so the two spellings name different files. Returns None when there is no such file.
    """
    folder, name = os.path.split(os.path.abspath(path))
    want = unicodedata.normalize("NFC", name)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    found = (n for n in names if n != name and unicodedata.normalize("NFC", n) == want)
    other = next(found, None)
    return None if other is None else os.path.join(folder, other)


def is_beir_folder(names: set[str]) -> bool:
    """Tell whether a folder holding ``names`` is a BEIR dataset (corpus plus queries/qrels)."""
    return BEIR_CORPUS in names and ("queries.jsonl" in names or "qrels" in names)


def walks_every_file(folder: str | os.PathLike[str]) -> bool:
    """Whether a walk of ``folder`` would read files other than a BEIR corpus: False for a
    BEIR dataset folder, which contributes only its ``corpus.jsonl``."""
    try:
        return not is_beir_folder(set(os.listdir(folder)))
    except OSError:
        return True


class Scanner:
    """Collect :class:`Candidate` files from roots, counting what it skips in a Tally."""

    def __init__(
        self,
        tally: Tally,
        max_bytes: int,
        *,
        within: Sequence[str],
        follow_symlinks: bool = False,
        skip: Sequence[str] = (),
    ) -> None:
        """Scan for files; symlinks must resolve inside ``within`` unless ``follow_symlinks``.

        Folders in ``skip`` (those that exist) are left out wherever the walk meets them,
        under any name or link, and counted as ignored: an index folder under a root
        changes with every write and holds nothing to index.
        """
        self.tally = tally
        self.max_bytes = max_bytes
        self.candidates: list[Candidate] = []
        self.follow_symlinks = follow_symlinks
        self._real_roots = [os.path.realpath(r) for r in within]
        self._visited: set[tuple[int, int]] = set()
        self._deferred: list[tuple[str, str, str, Rules]] = []
        self._skip = {key for key in map(_folder_key, skip) if key is not None}

    def add_file(self, path: str, doc_id: str, size: int, *, explicit: bool = False) -> None:
        """Queue one regular file for loading, or count it as unsupported / too large.

        A ``.jsonl`` file met while walking a folder is loaded only when it looks like a
        BEIR corpus (other JSONL, such as a query file beside the documents, is counted
        as unsupported), and a bad line in it is skipped and reported; one given
        explicitly must be a BEIR corpus, every line of it, or loading fails.
        """
        kind = kind_of(os.path.basename(path))
        if kind == "beir" and not explicit and not looks_like_beir(path):
            kind = None
        if kind is None:
            self.tally.unsupported += 1
            self.tally.unsupported_paths.append(path)
        elif kind != "beir" and size > self.max_bytes:  # BEIR: the limit is per record
            self.tally.skip_too_large(path, size, self.max_bytes, doc_id)
        else:
            self.candidates.append(Candidate(path, doc_id, kind, size, explicit))

    def scan_dir(self, root: str, id_prefix: str) -> None:
        """Walk folder ``root``; ids are ``id_prefix`` plus the path below ``root``.

        A root reached through a symlink to a folder already walked is skipped (counted
        as ignored): its files are loaded once, under the ids of their first walk.
        """
        try:
            st = os.stat(root)
        except OSError as exc:
            self.tally.unreadable.append((root, describe_os_error(exc)))
            return
        key = (st.st_dev, st.st_ino)
        if key in self._skip or (
            key in self._visited and os.path.realpath(root) != os.path.abspath(root)
        ):
            self.tally.ignored += 1
            return
        self._visited.add(key)
        self._walk(root, "", id_prefix, enclosing_rules(root, self._unreadable_ignore_file))

    def finish(self) -> None:
        """Walk the folder links met inside the roots whose folder no scan has walked yet."""
        while self._deferred:
            path, rel, id_prefix, rules = self._deferred.pop(0)
            try:
                st = os.stat(path)
            except OSError as exc:
                self.tally.unreadable.append((path, describe_os_error(exc, symlink=True)))
                continue
            key = (st.st_dev, st.st_ino)
            if key in self._visited or key in self._skip:
                self.tally.ignored += 1
                continue
            self._visited.add(key)
            self._walk(path, rel, id_prefix, rules)

    def outside(self, path: str) -> bool:
        """Tell (and report) whether reading ``path`` would leave the roots through a link."""
        if self.follow_symlinks:
            return False
        real = os.path.realpath(path)
        if real == os.path.abspath(path) or inside(real, self._real_roots):
            return False  # not through a link (a root outside is the caller's to refuse)
        self.tally.outside_links.append((path, real))
        return True

    def _walk(self, root: str, rel: str, id_prefix: str, rules: Rules) -> None:
        stack: list[tuple[str, str, Rules]] = [(root, rel, rules)]
        while stack:
            folder, rel, rules = stack.pop()
            try:
                entries = list_dir(folder)
            except OSError as exc:
                self.tally.unreadable.append((folder, describe_os_error(exc)))
                continue
            names = {e.name for e in entries}
            if is_beir_folder(names):
                entries = [e for e in entries if e.name == BEIR_CORPUS]
            else:
                rules = self._with_ignore_files(folder, rel, names, rules)
            for entry in entries:
                child = self._visit(entry, rel + entry.name, id_prefix, rules)
                if child is not None:
                    stack.append((child, rel + entry.name + "/", rules))

    def _visit(self, entry: os.DirEntry[str], rel: str, id_prefix: str, rules: Rules) -> str | None:
        """Handle one entry; return its path if it is a folder to descend into."""
        if entry.name.startswith("."):
            self.tally.ignored += 1
            return None
        if not valid_name(entry.name):
            self.tally.unreadable.append((printable(entry.path), "name is not valid UTF-8"))
            return None
        try:
            st = os.stat(entry.path)  # follows symlinks, so linked files and folders count
        except OSError as exc:
            reason = describe_os_error(exc, symlink=entry.is_symlink())
            self.tally.unreadable.append((entry.path, reason))
            return None
        is_dir = stat.S_ISDIR(st.st_mode)
        if rules and ignored(rules, rel, is_dir):
            self.tally.ignored += 1
            return None
        link = entry.is_symlink()
        if link and self.outside(entry.path):
            return None
        if is_dir:
            key = (st.st_dev, st.st_ino)
            if (
                key in self._visited
                or key in self._skip
                or is_junk_dir(entry.name, entry.path)
                or is_index_dir(entry.path)
            ):
                self.tally.ignored += 1
                return None
            if link and inside(os.path.realpath(entry.path), self._real_roots):
                self._deferred.append((entry.path, rel + "/", id_prefix, rules))
                return None
            self._visited.add(key)
            return entry.path
        if link and inside(os.path.realpath(entry.path), self._real_roots):
            self.tally.ignored += 1  # the target is read in its real place, once
            return None
        if stat.S_ISREG(st.st_mode):
            self.add_file(entry.path, id_prefix + rel, st.st_size)
        else:  # FIFOs, sockets, devices: opening them could block forever
            self.tally.unreadable.append((entry.path, "not a regular file"))
        return None

    def _with_ignore_files(self, folder: str, rel: str, names: set[str], rules: Rules) -> Rules:
        return with_ignore_files(folder, rel, names, rules, self._unreadable_ignore_file)

    def _unreadable_ignore_file(self, path: str, exc: OSError) -> None:
        self.tally.unreadable.append((path, describe_os_error(exc)))


def _folder_key(path: str) -> tuple[int, int] | None:
    """(device, inode) of folder ``path``, which names it under any path; None if absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # not made yet (a new index): there is nothing in it to skip
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def is_index_dir(path: str) -> bool:
    """Tell whether folder ``path`` is a ctxselect index (its database and writer lock).

    Two names a user folder is unlikely to hold together; two ``stat`` calls per folder.
    """
    return all(os.path.isfile(os.path.join(path, name)) for name in INDEX_MARKERS)


def is_junk_dir(name: str, path: str) -> bool:
    """Tell whether folder ``path`` named ``name`` is a cache, dependency or virtualenv."""
    if name in JUNK_DIRS or name.endswith(".egg-info"):
        return True
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))  # a virtualenv

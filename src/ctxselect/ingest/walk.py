"""Find the files to load under the given roots, applying the ignore rules.

Rules, in order: hidden names (leading ``.``) are ignored; ``.gitignore`` files at the root
and in every sub-folder apply with git semantics (deeper files override shallower ones,
``!`` re-includes, a file inside an ignored folder stays ignored); junk folders
(``__pycache__``, ``node_modules``, ``*.egg-info``, virtualenvs) are ignored; a folder
reached twice (symlink loops or two links to one folder) is entered once. A BEIR dataset
folder contributes only its ``corpus.jsonl``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxselect.ingest.beir import looks_like_beir
from ctxselect.ingest.kinds import kind_of
from ctxselect.ingest.report import Tally

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

JUNK_DIRS = frozenset({"__pycache__", "node_modules", "__pypackages__", "bower_components"})
BEIR_CORPUS = "corpus.jsonl"

# (folder of the .gitignore relative to the root, with a trailing "/" unless root; spec)
_Rules = tuple[tuple[str, "GitIgnoreSpec"], ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file that passed the ignore rules and has a loader.

    Attributes:
        path: Path to open, as the user gave the root plus the folders below it.
        doc_id: ``/``-separated id relative to the common base folder.
        kind: Loader kind from :func:`ctxselect.ingest.kinds.kind_of`.
        size: Size in bytes when scanned.
    """

    path: str
    doc_id: str
    kind: str
    size: int


def list_dir(path: str) -> list[os.DirEntry[str]]:
    """Return the entries of folder ``path`` sorted by name (the walk is deterministic)."""
    with os.scandir(path) as entries:
        return sorted(entries, key=lambda e: e.name)


def read_gitignore(path: str) -> list[str]:
    """Return the lines of a ``.gitignore`` file."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read().splitlines()


def describe_os_error(exc: OSError, *, symlink: bool = False) -> str:
    """Turn an OSError into the short reason shown in the report."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if isinstance(exc, FileNotFoundError):
        return "broken symlink" if symlink else "vanished during the scan"
    return exc.strerror or type(exc).__name__


def is_beir_folder(names: set[str]) -> bool:
    """Tell whether a folder holding ``names`` is a BEIR dataset (corpus plus queries/qrels)."""
    return BEIR_CORPUS in names and ("queries.jsonl" in names or "qrels" in names)


class Scanner:
    """Collect :class:`Candidate` files from roots, counting what it skips in a Tally."""

    def __init__(self, tally: Tally, max_bytes: int) -> None:
        self.tally = tally
        self.max_bytes = max_bytes
        self.candidates: list[Candidate] = []
        self._visited: set[tuple[int, int]] = set()

    def add_file(self, path: str, doc_id: str, size: int, *, explicit: bool = False) -> None:
        """Queue one regular file for loading, or count it as unsupported / too large.

        A ``.jsonl`` file met while walking a folder is loaded only when it looks like a
        BEIR corpus (other JSONL, such as a query file beside the documents, is counted
        as unsupported); one given explicitly must be a BEIR corpus or loading fails.
        """
        kind = kind_of(os.path.basename(path))
        if kind == "beir" and not explicit and not looks_like_beir(path):
            kind = None
        if kind is None:
            self.tally.unsupported += 1
        elif kind != "beir" and size > self.max_bytes:  # BEIR: the limit is per record
            self.tally.too_large += 1
        else:
            self.candidates.append(Candidate(path, doc_id, kind, size))

    def scan_dir(self, root: str, id_prefix: str) -> None:
        """Walk folder ``root``; ids are ``id_prefix`` plus the path below ``root``."""
        try:
            st = os.stat(root)
        except OSError as exc:
            self.tally.unreadable.append((root, describe_os_error(exc)))
            return
        self._visited.add((st.st_dev, st.st_ino))
        stack: list[tuple[str, str, _Rules]] = [(root, "", ())]
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
            elif ".gitignore" in names:
                rules = self._with_gitignore(folder, rel, rules)
            for entry in entries:
                child = self._visit(entry, rel + entry.name, id_prefix, rules)
                if child is not None:
                    stack.append((child, rel + entry.name + "/", rules))

    def _visit(
        self, entry: os.DirEntry[str], rel: str, id_prefix: str, rules: _Rules
    ) -> str | None:
        """Handle one entry; return its path if it is a folder to descend into."""
        if entry.name.startswith("."):
            self.tally.ignored += 1
            return None
        try:
            st = os.stat(entry.path)  # follows symlinks, so linked files and folders count
        except OSError as exc:
            reason = describe_os_error(exc, symlink=entry.is_symlink())
            self.tally.unreadable.append((entry.path, reason))
            return None
        is_dir = stat.S_ISDIR(st.st_mode)
        if rules and _gitignored(rules, rel, is_dir):
            self.tally.ignored += 1
            return None
        if is_dir:
            key = (st.st_dev, st.st_ino)
            if _is_junk_dir(entry) or key in self._visited:
                self.tally.ignored += 1
                return None
            self._visited.add(key)
            return entry.path
        if stat.S_ISREG(st.st_mode):
            self.add_file(entry.path, id_prefix + rel, st.st_size)
        else:  # FIFOs, sockets, devices: opening them could block forever
            self.tally.unreadable.append((entry.path, "not a regular file"))
        return None

    def _with_gitignore(self, folder: str, rel: str, rules: _Rules) -> _Rules:
        from pathspec import GitIgnoreSpec  # pathspec: gitignore matching as git does it

        path = os.path.join(folder, ".gitignore")
        try:
            lines = read_gitignore(path)
        except OSError as exc:
            self.tally.unreadable.append((path, describe_os_error(exc)))
            return rules
        return (*rules, (rel, GitIgnoreSpec.from_lines(lines)))


def _gitignored(rules: Sequence[tuple[str, GitIgnoreSpec]], rel: str, is_dir: bool) -> bool:
    """Decide like git: the deepest .gitignore with a matching pattern wins."""
    probe = rel + "/" if is_dir else rel
    for prefix, spec in reversed(rules):
        decision = spec.check_file(probe[len(prefix) :]).include
        if decision is not None:
            return decision
    return False


def _is_junk_dir(entry: os.DirEntry[str]) -> bool:
    name = entry.name
    if name in JUNK_DIRS or name.endswith(".egg-info"):
        return True
    return os.path.isfile(os.path.join(entry.path, "pyvenv.cfg"))  # a virtualenv

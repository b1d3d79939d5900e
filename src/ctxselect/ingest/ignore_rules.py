"""Ignore files: ``.gitignore`` and ``.ctxselectignore`` patterns, decided as git decides.

A folder walk (:mod:`ctxselect.ingest.walk`) and ``add``'s check of what a re-scan would
leave out (:mod:`ctxselect.ingest.rescan`) read the same rules from here. The ignore files
(``config.IGNORE_FILES``) of every folder from a root down apply, deeper over shallower, and
in one folder ``.ctxselectignore`` over ``.gitignore``. When a root lies inside a git work
tree, the ignore files of the folders between the work tree's top and the root apply too,
under those, with ``.git/info/exclude`` below them all: if git ignores a file, the walk
does. These files are only read to leave files out; nothing above a root is indexed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxselect.config import IGNORE_FILES

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

GIT_EXCLUDE = os.path.join(".git", "info", "exclude")
"""The repository's own ignore file, under the work tree's top."""


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The patterns of one ignore file, and where they apply.

    A path ``rel`` (relative to the walk's root) is matched as ``lead + rel[len(prefix):]``:
    a file in the walk has its folder as ``prefix`` (``rel`` style, "" at the root) and no
    ``lead``; a file above the root has no ``prefix`` and the root's path relative to its
    folder as ``lead``.

    Attributes:
        prefix: The folder of the file, relative to the root, with a trailing ``/``.
        lead: The root relative to the file's folder, with a trailing ``/``.
        path: The file, as errors name it.
        spec: Its patterns.
    """

    prefix: str
    lead: str
    path: str
    spec: GitIgnoreSpec


Rules = tuple[IgnoreFile, ...]
"""Ignore files in force, lowest priority first."""


def read_ignore_file(path: str) -> list[str]:
    """Return the lines of an ignore file (``.gitignore`` or ``.ctxselectignore``)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read().splitlines()


def with_ignore_files(
    folder: str,
    rel: str,
    names: Collection[str],
    rules: Rules,
    unreadable: Callable[[str, OSError], None] | None = None,
) -> Rules:
    """``rules`` with the ignore files among ``names`` (the entries of ``folder``) added.

    Args:
        folder: The folder the names are in.
        rel: That folder relative to the root, ``rel`` style.
        names: The names in ``folder``.
        rules: The rules of the folders above.
        unreadable: Called with an ignore file that cannot be read, and why (that file is
            then left out of the rules).
    """
    files = [os.path.join(folder, name) for name in IGNORE_FILES if name in names]
    return (*rules, *_read(files, rel, "", unreadable))


def enclosing_rules(root: str, unreadable: Callable[[str, OSError], None] | None = None) -> Rules:
    """The ignore files above ``root`` that git applies to it: ``.git/info/exclude`` and
    those of the folders from the work tree's top down to ``root``'s parent (none when
    ``root`` is in no git work tree)."""
    here = os.path.abspath(root)
    top = _work_tree_top(here)
    if top is None:
        return ()
    # .git/info/exclude first (git's lowest priority), then each folder's files from the
    # top down to the root's parent; the root's own are read by the walk
    placed = [(os.path.join(top, GIT_EXCLUDE), top)]
    folder, above = here, []
    while folder != top:
        folder = os.path.dirname(folder)
        above.append(folder)
    placed += [(os.path.join(f, name), f) for f in reversed(above) for name in IGNORE_FILES]
    rules: list[IgnoreFile] = []
    for path, folder in placed:
        if not os.path.isfile(path):
            continue
        rel = os.path.relpath(here, folder).replace(os.sep, "/")
        lead = "" if rel == "." else rel + "/"
        named = _folders_of(lead) if lead else ()
        rules.extend(_read([path], "", lead, unreadable, named=named))
    return tuple(rules)


def _folders_of(lead: str) -> list[str]:
    """``a/b/`` -> ``["a/", "a/b/"]``: the root and the folders above it, below a file."""
    parts = lead.rstrip("/").split("/")
    return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]


def _work_tree_top(folder: str) -> str | None:
    """The nearest folder from ``folder`` up that holds ``.git`` (None: not in a repo)."""
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _read(
    paths: Sequence[str],
    prefix: str,
    lead: str,
    unreadable: Callable[[str, OSError], None] | None,
    named: Sequence[str] = (),
) -> list[IgnoreFile]:
    """The ignore files at ``paths``; with ``named`` (the root and the folders above it,
    as seen from a file above the root), a pattern that ignores one of those is left
    out: the user named the root, so ``data/`` in a repository's ``.gitignore`` does not
    empty ``ctxselect index data/scifact``, while ``*.secret.md`` still applies in it."""
    from pathspec import GitIgnoreSpec  # pathspec: gitignore matching as git does it

    read = []
    for path in paths:
        try:
            lines = read_ignore_file(path)
        except OSError as exc:
            if unreadable is not None:
                unreadable(path, exc)
            continue
        try:
            spec = GitIgnoreSpec.from_lines(lines)
        except (ValueError, re.error):  # a pattern git reads as matching nothing
            lines = [line for line in lines if _compiled(line) is not None]
            spec = GitIgnoreSpec.from_lines(lines)
        if named:
            lines = [line for line in lines if not _ignores_any(line, named)]
            spec = GitIgnoreSpec.from_lines(lines)
        read.append(IgnoreFile(prefix, lead, path, spec))
    return read


def _compiled(line: str) -> GitIgnoreSpec | None:
    """The spec of one ignore-file line, or None when it is not a valid pattern (a lone
    backslash, a backwards range ``[z-a]``), which git reads as matching nothing."""
    from pathspec import GitIgnoreSpec

    try:
        return GitIgnoreSpec.from_lines([line])
    except (ValueError, re.error):
        return None


def _ignores_any(line: str, folders: Sequence[str]) -> bool:
    spec = _compiled(line)
    return spec is not None and any(spec.match_file(folder) for folder in folders)


def ignored(rules: Rules, rel: str, is_dir: bool) -> bool:
    """Whether the rules leave out ``rel`` (a path relative to the root)."""
    return ignore_hit(rules, rel, is_dir) is not None


def ignore_hit(rules: Rules, rel: str, is_dir: bool) -> tuple[str, str] | None:
    """Decide like git: the deepest ignore file with a matching pattern wins (in one
    folder, the later of ``config.IGNORE_FILES``).

    Returns:
        When that leaves out ``rel``: the ignore file's path and the pattern.
    """
    probe = rel + "/" if is_dir else rel
    for rule in reversed(rules):
        result = rule.spec.check_file(rule.lead + probe[len(rule.prefix) :])
        if result.include is None:
            continue
        if not result.include or result.index is None:
            return None
        pattern = getattr(rule.spec.patterns[result.index], "pattern", "")
        return rule.path, str(pattern)
    return None


__all__ = [
    "IgnoreFile",
    "Rules",
    "enclosing_rules",
    "ignore_hit",
    "ignored",
    "read_ignore_file",
    "with_ignore_files",
]

"""What ``--watch`` polls: the size and modification time of every file under the roots."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ctxselect.config import IGNORE_FILES

Fingerprint = frozenset[tuple[str, int, int]]


def fingerprint(roots: Sequence[str], skip: str) -> Fingerprint:
    """Return (path, size, mtime) of every file under ``roots``.

    Hidden names are left out (ingest ignores them too), except the ignore files
    (``.gitignore``, ``.ctxselectignore``), whose edits change what is indexed; so is the
    folder ``skip`` (the index itself, which every update changes); a folder reached
    twice (symlink loops) is entered once.
    """
    seen: set[tuple[str, int, int]] = set()
    visited: set[tuple[int, int]] = set()
    stack = list(roots)
    while stack:
        path = stack.pop()
        try:
            st = os.stat(path)
        except OSError:
            continue  # vanished or unreadable: the next index run reports it
        if not os.path.isdir(path):
            seen.add((path, st.st_size, st.st_mtime_ns))
            continue
        if (st.st_dev, st.st_ino) in visited or os.path.abspath(path) == skip:
            continue
        visited.add((st.st_dev, st.st_ino))
        try:
            names = os.listdir(path)
        except OSError:
            continue
        stack.extend(
            os.path.join(path, n) for n in names if not n.startswith(".") or n in IGNORE_FILES
        )
    return frozenset(seen)

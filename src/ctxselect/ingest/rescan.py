"""Would a walk of the roots load this file? ``add`` asks before it writes.

``add`` loads the paths it is given as they are, hidden or ignored ones included, while the
next ``index`` re-scan walks the roots with the ignore rules of :mod:`ctxselect.ingest.walk`
and would remove such a file again. :func:`left_out` replays those rules from the root down
to one file and says which rule leaves it out (for an ignore-file pattern: the file, its
line and the pattern) and how to include it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ctxselect.ingest.ignore_rules import (
    Rules,
    enclosing_rules,
    ignore_hit,
    read_ignore_file,
    with_ignore_files,
)
from ctxselect.ingest.walk import (
    BEIR_CORPUS,
    inside,
    is_beir_folder,
    is_index_dir,
    is_junk_dir,
    list_dir,
)

# folder -> (names in it, the ignore-file rules that apply to those names)
Listings = dict[str, tuple[frozenset[str], Rules]]

_RENAME = "rename it, or index it as a root of its own (`ctxselect index ROOT... PATH`)"


def left_out(path: str, roots: Sequence[str], cache: Listings | None = None) -> str:
    """Why a walk of the folder ``roots`` would not load the file ``path``, or "" if it would.

    Checks each name from the root holding ``path`` down, with the walk's own rules:
    hidden names, ``.gitignore`` and ``.ctxselectignore`` patterns, junk folders, other
    index folders, BEIR dataset folders (only ``corpus.jsonl`` is read), and file links
    whose target is inside the roots (the target is read instead). A path under no folder
    root gives "". The answer ends with how to include the file.

    Args:
        path: A file under one of ``roots``.
        roots: The index's roots.
        cache: Folder listings and rules kept between calls for the same roots.
    """
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    for candidate in dict.fromkeys((os.path.abspath(path), real)):
        for root in roots:
            root = os.path.abspath(root)
            if os.path.isdir(root) and candidate != root and inside(candidate, [root]):
                parts = os.path.relpath(candidate, root).split(os.sep)
                why = _left_out_below(root, parts, {} if cache is None else cache)
                return why or _linked_inside(candidate, roots)
    return ""


def _left_out_below(root: str, parts: list[str], cache: Listings) -> str:
    rules: Rules = enclosing_rules(root)
    folder, rel = root, ""
    for depth, name in enumerate(parts):
        is_dir = depth < len(parts) - 1
        listing = _listing(folder, rel, rules, cache)
        if listing is None:
            return ""  # the load itself reports what it cannot read
        names, rules = listing
        if is_beir_folder(set(names)) and name != BEIR_CORPUS:
            return (
                f"{folder} is a BEIR dataset folder, of which a scan reads only its "
                f"{BEIR_CORPUS}; move the file out of that folder"
            )
        if name.startswith("."):
            return f"the name {name!r} is hidden (it starts with a dot); {_RENAME}"
        hit = ignore_hit(rules, rel + name, is_dir)
        if hit is not None:
            what = f"the folder {os.path.join(folder, name)}" if is_dir else "it"
            return _ignored_by(hit[0], hit[1], what)
        folder = os.path.join(folder, name)
        if is_dir and is_junk_dir(name, folder):
            return f"{folder} is a junk folder (caches, dependencies, virtualenvs); {_RENAME}"
        if is_dir and is_index_dir(folder):
            return f"{folder} is a ctxselect index folder, which holds no documents"
        rel += name + "/"
    return ""


def _linked_inside(path: str, roots: Sequence[str]) -> str:
    """Why a file link whose target lies inside ``roots`` is left out, or ""."""
    if not os.path.islink(path):
        return ""
    target = os.path.realpath(path)
    if not inside(target, [os.path.realpath(r) for r in roots]):
        return ""
    return (
        f"it is a symlink to {target}, inside the roots, which a scan indexes once, in its "
        f"real place; add {target} instead"
    )


def _listing(
    folder: str, rel: str, rules: Rules, cache: Listings
) -> tuple[frozenset[str], Rules] | None:
    """The names in ``folder`` and the rules for them (its own ignore files added), cached."""
    if folder in cache:
        return cache[folder]
    try:
        names = frozenset(e.name for e in list_dir(folder))
    except OSError:
        return None
    if not is_beir_folder(set(names)):  # as the walk reads them
        rules = with_ignore_files(folder, rel, names, rules)
    cache[folder] = (names, rules)
    return cache[folder]


def _ignored_by(ignore_file: str, pattern: str, what: str) -> str:
    """Name the ignore-file line holding ``pattern`` (the last one: git's winner)."""
    try:
        lines = [line.strip() for line in read_ignore_file(ignore_file)]
    except OSError:
        lines = []
    where = f" line {len(lines) - lines[::-1].index(pattern)}" if pattern in lines else ""
    fix = (
        "remove that pattern (a file inside an ignored folder cannot be re-included)"
        if what != "it"
        else "remove that pattern, or re-include the file with a '!' pattern after it"
    )
    return f"the pattern {pattern!r} in {ignore_file}{where} ignores {what}; {fix}"


__all__ = ["Listings", "left_out"]

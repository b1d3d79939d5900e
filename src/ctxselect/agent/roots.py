"""Paths inside the indexed roots: the only files a write tool may make the index read.

Only the write tools come here, so the ingest and write paths are imported inside the
functions that use them: a read-only session never loads them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from ctxselect.agent.loading import load_index
from ctxselect.api.read import Index
from ctxselect.errors import ConfigError
from ctxselect.types import WriteResult


def resolve_inside(roots: Sequence[str], path: str) -> str:
    """Resolve ``path`` (relative to the roots' folder, like a document id) inside ``roots``.

    Returns:
        The real path (symlinks resolved).

    Raises:
        ConfigError: The index records no roots, or ``path`` is absolute, contains
            ``..``, does not exist, or leads through a symlink out of the roots.
    """
    from ctxselect.ingest import base_folder
    from ctxselect.ingest.walk import inside as _inside

    if not roots:
        raise ConfigError("this index records no roots: rebuild it with `ctxselect index PATH`")
    base = base_folder(roots)
    if not path or "\x00" in path or os.path.isabs(path) or path.startswith(("~", "\\")):
        raise ConfigError(
            f"path {path!r} is refused: give a path relative to the indexed root {base}, "
            f"like a document id"
        )
    if ".." in re.split(r"[\\/]", path):
        raise ConfigError(f"path {path!r} is refused: '..' may not appear in a path")
    lexical = os.path.normpath(os.path.join(base, path))
    if not _inside(lexical, [os.path.abspath(r) for r in roots]):
        raise ConfigError(f"path {path!r} is refused: it is not inside the indexed roots")
    if not os.path.lexists(lexical):
        raise ConfigError(f"path {path!r} does not exist under the indexed root {base}")
    real = os.path.realpath(lexical)
    if not _inside(real, [os.path.realpath(r) for r in roots]):
        raise ConfigError(
            f"path {path!r} is refused: it leads through a symlink to {real}, outside the "
            f"indexed roots"
        )
    if not os.path.exists(real):
        raise ConfigError(f"path {path!r} is a broken symlink")
    return real


def outside_files(roots: Sequence[str]) -> list[str]:
    """Symlinks under ``roots`` that lead outside them (indexing skips them unless told to).

    Walks the folder roots with indexing's own ignore and symlink rules; no file is opened.
    """
    from ctxselect.api.write import DEFAULT_MAX_BYTES
    from ctxselect.ingest.report import Tally
    from ctxselect.ingest.walk import Scanner

    tally = Tally()
    scanner = Scanner(tally, DEFAULT_MAX_BYTES, within=roots)
    for root in roots:
        if os.path.isdir(root):
            scanner.scan_dir(root, "")
    scanner.finish()
    return [link for link, _target in tally.outside_links]


def doc_ids_under(paths: Sequence[str], doc_ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split ``paths`` into the document ids they produced and the paths that produced none."""
    ids = sorted(set(doc_ids))
    found: dict[str, None] = {}
    missing = []
    for path in paths:
        prefix = os.path.normpath(path).replace(os.sep, "/").strip("/")
        under = [d for d in ids if prefix in ("", ".") or d == prefix or d.startswith(prefix + "/")]
        found.update(dict.fromkeys(under))
        if not under:
            missing.append(path)
    return list(found), missing


def write(index: Index, paths: tuple[str, ...]) -> tuple[Index, WriteResult]:
    """Re-index ``index``'s roots and return the reloaded index and what the run did.

    ``paths`` are the ones a caller asked for; the result says which gave documents.

    Raises:
        ConfigError: The roots hold symlinks to files outside them.
    """
    from ctxselect.api.write import index_paths

    outside = outside_files(index.roots)
    if outside:
        raise ConfigError(
            f"refused: indexing the roots would read {len(outside)} file(s) outside them "
            f"through symlinks ({', '.join(outside[:3])}): remove those links, or index "
            f"them yourself with `ctxselect index`"
        )
    report = index_paths(index.roots, index.path)
    fresh = load_index(index.path)
    found, missing = doc_ids_under(paths, fresh.table.doc_ids)
    note = f"{len(missing)} path(s) gave no document: see report.skipped" if missing else ""
    info = fresh.info()
    result = WriteResult(
        report, paths, tuple(found), tuple(missing), info.documents, info.chunks, note
    )
    return fresh, result

"""Plan a write: which documents are added, updated, renamed, removed or left alone.

The facade passes in the change detection (``ingest.diff_documents``) so this package
stays free of ``ingest/``. Renamed documents (a new id, the content and kind of a vanished
one) keep their chunks: they are re-keyed, not re-chunked.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxselect.errors import InputError
from ctxselect.stores.base import Store
from ctxselect.types import Chunk, Document

Diff = Callable[[Mapping[str, str], Sequence[Document]], Any]
"""``ingest.diff_documents``: old hashes and new documents -> a ChangeSet."""


@dataclasses.dataclass(slots=True)
class Plan:
    """What one write does, and what its report says about it.

    Attributes:
        upserts: Documents to insert or replace.
        removed: Ids of documents to delete (renamed ones included).
        renames: New id -> old id of renamed documents (their chunks are re-keyed).
        full: Rebuild every chunk and the base (first build, changed settings).
        modified: Documents whose content changed (in ``updated`` too); a full rebuild
            counts every kept document as updated.
    """

    upserts: list[Document]
    removed: list[str]
    renames: dict[str, str] = dataclasses.field(default_factory=dict)
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    full: bool = False
    note: str = ""
    modified: int = 0


def renames(
    store: Store,
    docs: Mapping[str, Document],
    added: Sequence[str],
    removed: Sequence[str],
    hashes: Mapping[str, str],
) -> dict[str, str]:
    """Pair each added document with a removed one of the same content and kind."""
    by_hash: dict[str, list[str]] = {}
    for old in removed:
        by_hash.setdefault(hashes[old], []).append(old)
    pairs: dict[str, str] = {}
    for new in added:
        olds = by_hash.get(docs[new].content_hash)
        if olds and store.get_document(olds[0]).kind == docs[new].kind:
            pairs[new] = olds.pop(0)
    return pairs


def moved_chunks(store: Store, pairs: Mapping[str, str]) -> list[Chunk]:
    """The chunks of renamed documents, re-keyed to their new ids (no re-chunking)."""
    out = []
    old_to_new = {old: new for new, old in pairs.items()}
    for c in store.chunks_of(list(old_to_new)):
        new = old_to_new[c.doc_id]
        parent = c.parent_id.replace(f"{c.doc_id}@", f"{new}@", 1) if c.parent_id else ""
        out.append(
            dataclasses.replace(c, chunk_id=f"{new}#{c.ordinal}", doc_id=new, parent_id=parent)
        )
    return out


def plan_changes(
    store: Store,
    docs: Sequence[Document],
    removed: Sequence[str],
    *,
    complete: bool,
    rebuild: bool,
    keep: Callable[[str], bool],
    diff: Diff,
) -> Plan:
    """Compare ``docs`` with the store's documents and plan the write.

    Args:
        docs: Documents wanted: every one (``complete``) or just these.
        removed: Ids to delete as well (ignored when ``complete``: missing ones go).
        rebuild: Plan a full rebuild of every chunk.
        keep: Ids a complete scan lacks that must not be deleted (unreadable files).
        diff: The change detection (``ingest.diff_documents``).
    """
    by_id = {d.doc_id: d for d in docs}
    hashes = store.doc_hashes() if complete else store.doc_hashes([*by_id, *removed])
    kept = [d for d in hashes if d not in by_id and keep(d)] if complete else []
    known = {k: v for k, v in hashes.items() if (k not in kept if complete else k in by_id)}
    changes = diff(known, docs)
    gone = list(changes.removed) if complete else [d for d in removed if d in hashes]
    if rebuild:
        upserts = [*docs, *(store.get_document(d) for d in kept)]
        updated = len(changes.modified) + len(changes.unchanged) + len(kept)
        added, modified = len(changes.added), len(changes.modified)
        return Plan(upserts, gone, added=added, updated=updated, full=True, modified=modified)
    pairs = renames(store, by_id, changes.added, gone, hashes)
    renamed_old = set(pairs.values())
    return Plan(
        upserts=[by_id[d] for d in (*changes.added, *changes.modified)],
        removed=[d for d in gone if d not in renamed_old] + sorted(renamed_old),
        renames=pairs,
        added=len(changes.added) - len(pairs),
        updated=len(changes.modified),
        unchanged=len(changes.unchanged) + len(kept),  # kept as indexed: counted, not lost
    )


def unreadable_ids(
    unreadable: Sequence[tuple[str, str]], roots: Sequence[str]
) -> Callable[[str], bool]:
    """Doc ids (or id prefixes, for folders) of files that exist but could not be read.

    A re-scan keeps their last indexed version rather than deleting them: a permission
    or I/O error is not a deletion. Files that vanished are deleted as usual.
    """
    gone = ("vanished during the scan", "broken symlink")
    base = _base(roots)
    ids = [_rel(path, base) for path, reason in unreadable if reason not in gone]
    prefixes = tuple(f"{i}/" for i in ids)
    names = frozenset(ids)
    return lambda doc_id: doc_id in names or doc_id.startswith(prefixes)


def _base(roots: Sequence[str]) -> str:
    """The folder doc ids are relative to, as ingest computes it."""
    folders = [r if os.path.isdir(r) else os.path.dirname(r) for r in roots]
    return os.path.commonpath(folders) if folders else ""


def _rel(path: str, base: str) -> str:
    return os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def under_roots(docs: Sequence[Document], roots: Sequence[str]) -> list[Document]:
    """Give file documents the ids and absolute sources a scan of ``roots`` gives them
    (BEIR records keep their ids).

    A file whose folder, resolved, lies inside the roots gets the id of that real place,
    as a scan (which walks a folder once, where it really is) gives it: a file reached
    through a folder link inside the roots is never a second copy under another id. A
    file reached through a followed link out of the roots keeps the id of its path.

    Raises:
        InputError: A file (a BEIR corpus too) lies outside every root (a re-scan would
            drop it).
    """
    if not roots:
        return list(docs)
    base = _base(roots)
    real_roots = [os.path.realpath(r) for r in roots]
    out = []
    for doc in docs:
        beir = doc.kind == "beir"  # source: "PATH:LINE" of the corpus file
        path = os.path.abspath(doc.source.rsplit(":", 1)[0] if beir else doc.source)
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if _inside(real, real_roots):
            doc_id, source = _rel(real, os.path.realpath(base)), real
        elif _inside(path, roots):
            doc_id, source = _rel(path, base), path
        else:
            raise InputError(
                f"{path if beir else doc.source} is outside the index's roots "
                f"({', '.join(roots)}): a re-scan would drop it; index its folder with "
                f"`ctxselect index ROOT...` instead"
            )
        if beir:  # the record keeps its id; its source names the corpus as a scan does
            line = doc.source.rsplit(":", 1)[1]
            out.append(dataclasses.replace(doc, source=f"{source}:{line}"))
        else:
            out.append(dataclasses.replace(doc, doc_id=doc_id, source=source))
    return out

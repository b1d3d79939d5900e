"""The write-path facade: index, add, remove, compact, verify and watch an index folder.

It composes ingest -> chunk -> index (segments) -> store, the way ``api.py`` composes the
read path. Every write holds the folder's writer lock (a second writer gets a message
naming the holder, or waits with ``wait``) and commits in one transaction; searches in
other processes keep reading the last committed generation meanwhile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxselect import chunk as _chunk
from ctxselect import ingest as _ingest
from ctxselect import modes as _modes
from ctxselect import retrieve as _retrieve
from ctxselect.config import (
    DEFAULT_COMPACT_FRACTION,
    WAIT,
    BM25Params,
    ChunkSpec,
    resolve_index_dir,
)
from ctxselect.errors import ConfigError, CtxselectError, IndexNotFoundError, InputError
from ctxselect.errors import NotFoundError as _NotFound
from ctxselect.index import compact as _compact
from ctxselect.index.plan import Plan, moved_chunks, plan_changes, under_roots, unreadable_ids
from ctxselect.index.writer import (
    ModeOps,
    chunk_documents,
    write_full,
    write_update,
)
from ctxselect.manifest import EmbedderSpec, Manifest
from ctxselect.stores import Store, open_store
from ctxselect.stores.open import DEFAULT_WAIT
from ctxselect.types import CompactReport, Document, IndexReport, VerifyReport

DEFAULT_MAX_BYTES = _ingest.DEFAULT_MAX_BYTES
PathArg = str | os.PathLike[str]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _manifest(store: Store) -> Manifest:
    """The store's committed manifest, typed."""
    return Manifest.from_dict(store.read_manifest(), index=store.uri)


def _commit(
    store: Store,
    plan: Plan,
    *,
    chunk: ChunkSpec,
    modes: Mapping[str, ModeOps],
    manifest: Mapping[str, Any],
    progress: bool,
) -> None:
    chunker = _chunk.make_chunker(chunk)
    fresh = [d for d in plan.upserts if d.doc_id not in plan.renames]
    chunks = chunk_documents(fresh, chunker.chunk, progress=progress)
    if plan.full:
        write_full(
            store,
            documents=plan.upserts,
            removed=plan.removed,
            chunks=chunks,
            modes=modes,
            manifest=manifest,
        )
        return
    chunks += moved_chunks(store, plan.renames)
    write_update(
        store,
        upserts=plan.upserts,
        removed=plan.removed,
        chunks=chunks,
        modes=modes,
        manifest=manifest,
    )


def _compact_store(store: Store, modes: Mapping[str, ModeOps]) -> tuple[int, int, int]:
    """Compact, then drop cached vectors no live chunk uses (bounded like the segments)."""
    done = _compact.compact_store(store, modes, {"compacted": _now()})
    dense = _manifest(store).embedder
    if _modes.has_vectors(modes) and dense is not None:
        _modes.prune_vectors(store, dense)
    return done


def _maintain(store: Store, modes: Mapping[str, ModeOps], fraction: float | None) -> bool:
    """Compact or consolidate deltas when the policy says so; True if compacted."""
    manifest = _manifest(store)
    if _compact.needs_compaction(manifest, fraction):
        _compact_store(store, modes)
        return True
    if _compact.needs_delta_merge(manifest):
        _compact.merge_store_deltas(store, modes)
    return False


def _write(
    store: Store,
    docs: Sequence[Document],
    *,
    removed: Sequence[str] = (),
    complete: bool,
    roots: Sequence[str],
    chunk: ChunkSpec | None,
    bm25: BM25Params | None,
    progress: bool,
    compact_fraction: float | None,
    keep: Callable[[str], bool] = lambda _doc_id: False,
    embedder: _modes.EmbedderArg = None,
    ann_threshold: int | None = None,
) -> tuple[Plan, bool]:
    """Bring the store in line with ``docs`` (all of them if ``complete``); lock held.

    ``keep`` names documents a complete scan lacks but must not delete (their files
    exist but could not be read this time).
    """
    old = _manifest(store)
    chunk, bm25 = chunk or old.chunk, bm25 or old.bm25
    dense, given = _modes.resolve_embedder(old, embedder, ann_threshold)
    known = old.built
    keyword_changed = known and (chunk != old.chunk or bm25 != old.bm25)
    dense_changed = known and dense != old.embedder
    changed = keyword_changed or dense_changed
    if changed and not complete:
        raise ConfigError(
            f"the index {store.uri} was built with other settings ({old.chunk}, {old.bm25}, "
            f"embedder {old.embedder}): change settings with `ctxselect index` "
            f"(it rebuilds the index), not add"
        )
    modes = _modes.write_ops(_modes.WriteInputs(store, bm25, dense, given, progress))
    stored = old.modes
    has_base = old.state.base_rows is not None
    rebuild = not has_base or changed or (complete and set(stored) != set(modes))
    if not rebuild and stored:
        modes = {m: modes[m] for m in stored if m in modes}
    plan = plan_changes(
        store,
        docs,
        removed,
        complete=complete,
        rebuild=rebuild,
        keep=keep,
        diff=_ingest.diff_documents,
    )
    if not (plan.upserts or plan.removed or rebuild):
        # a run killed between its commit and its compaction left work pending: do it now
        return plan, _maintain(store, modes, compact_fraction)
    model_changed = known and _model_id(dense) != _model_id(old.embedder)
    new_manifest = dataclasses.replace(
        _modes.tuned_settings(old, dense, model_changed),
        created=old.created or _now(),
        updated=_now(),
        roots=tuple(roots),
        chunk=chunk,
        bm25=bm25,
        modes=tuple(modes),
        embedder=dense,
    )
    if keyword_changed:
        plan.note = "settings changed: every document was re-chunked"
    elif dense_changed:
        plan.note = _dense_note(old.embedder, dense)
        # a rebuild counts every document as updated; only the dense artefacts changed
        plan.updated, plan.unchanged = plan.modified, plan.updated - plan.modified
    if model_changed and old.fusion:
        plan.note += "; the embedder changed, so the tuned fusion was dropped (run tune again)"
    manifest = new_manifest.to_dict()
    _commit(store, plan, chunk=chunk, modes=modes, manifest=manifest, progress=progress)
    if plan.full and dense is not None:
        _modes.prune_vectors(store, dense)
    compacted = rebuild or _maintain(store, modes, compact_fraction)
    return plan, compacted


def _model_id(spec: EmbedderSpec | None) -> str | None:
    return spec.model_id if spec is not None else None


def _dense_note(old: EmbedderSpec | None, new: EmbedderSpec | None) -> str:
    """Say what an embedder change did to the index (documents are not re-chunked)."""
    needy = _modes.embedding_modes()
    if new is None:
        return f"embedder removed: dense vectors dropped (modes {' and '.join(needy)} are gone)"
    if old is None:
        return f"embedder {new.name} added: every chunk was embedded (modes {', '.join(needy)})"
    if new.model_id != old.model_id:
        return (
            f"embedder changed from {old.name} to {new.name}: every chunk was "
            f"embedded again (vectors this model made before were reused)"
        )
    return "embedder settings changed: dense index rebuilt from the stored vectors"


def _report(
    store: Store,
    plan: Plan,
    compacted: bool,
    started: float,
    *,
    ingest: _ingest.IngestReport | None = None,
    wrote: bool = True,
) -> IndexReport:
    state = _manifest(store).state
    counts = store.counts()
    skipped: dict[str, int] = {}
    if ingest is not None:
        skipped = {
            "binary": ingest.binary,
            "empty": ingest.empty,
            "too_large": ingest.too_large,
            "unsupported": ingest.unsupported,
            "ignored": ingest.ignored,
            "outside_roots": len(ingest.outside_links),
            "decoded_with_replacement": ingest.decoded_with_replacement,
        }
    ingest = ingest or _ingest.IngestReport()
    return IndexReport(
        index=store.uri,
        added=plan.added,
        updated=plan.updated,
        removed=len(plan.removed) - len(plan.renames),
        unchanged=plan.unchanged,
        documents=counts["documents"],
        chunks=counts["chunks"],
        rebuilt=wrote,
        seconds=round(time.perf_counter() - started, 3),
        skipped=skipped,
        unreadable=tuple(ingest.unreadable),
        note=plan.note,
        renamed=len(plan.renames),
        compacted=compacted,
        delta_segments=len(state.segments),
        generation=state.generation,
        unsupported_files=ingest.unsupported_paths,
        outside_links=ingest.outside_links,
    )


def index_paths(
    paths: Sequence[PathArg] = (),
    index: PathArg | None = None,
    *,
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
    wait: float = 0.0,
    compact_fraction: float | None = DEFAULT_COMPACT_FRACTION,
    embedder: _modes.EmbedderArg = None,
    ann_threshold: int | None = None,
    follow_symlinks: bool = False,
) -> IndexReport:
    """Index files, folders or BEIR corpora into an index folder, touching only what changed.

    Re-scans ``paths`` (or the index's own roots), then adds new documents, re-chunks
    modified ones, deletes vanished ones and re-keys renamed ones (same content hash)
    without re-chunking them. Changed chunking or BM25 settings rebuild everything.

    Args:
        paths: Roots to scan; empty means the roots the index was built from.
        index: Index folder (default: ``$CTXSELECT_INDEX`` or ``./.ctxselect``).
        chunk: Chunking settings; default: the index's own, else ``ChunkSpec()``.
        bm25: BM25 settings; default: the index's own, else ``BM25Params()``.
        max_bytes: Files larger than this are skipped and counted.
        progress: Show progress bars on stderr.
        wait: Seconds to wait for another writer to finish (0: fail at once, naming it).
        compact_fraction: Compact when changes since the last compaction pass this share
            of the live chunks (None: only on ``compact_index``).
        embedder: Add dense retrieval (modes ``dense`` and ``hybrid``) with this embedder:
            a name (``minilm``), an :class:`~ctxselect.embed.Embedder`, or ``"none"`` to
            drop it; default: the index's own (none for a new index). Chunks are embedded
            once: vectors are kept by content hash in the index.
        ann_threshold: Build an HNSW graph from this many embedded chunks on (default
            50,000; below it dense search is exact).
        follow_symlinks: Read through symlinks whose target lies outside the roots too;
            by default they are skipped and named in the report (``outside_links``). Not
            remembered: a later run without it removes what was read through them.

    Returns:
        What changed; when nothing changed, nothing is written (``rebuilt`` is False).
    """
    started = time.perf_counter()
    with _writing(index, wait) as store:
        roots = [str(Path(p).resolve()) for p in paths] or list(_manifest(store).roots)
        if not roots:
            raise ConfigError(
                f"no paths to index and index {store.uri} has no roots yet: "
                f"run `ctxselect index PATH... --index {store.uri}`"
            )
        loaded = _ingest.load_paths(
            roots, max_bytes=max_bytes, progress=progress, follow_symlinks=follow_symlinks
        )
        plan, compacted = _write(
            store,
            loaded.documents,
            complete=True,
            roots=roots,
            chunk=chunk,
            bm25=bm25,
            progress=progress,
            compact_fraction=compact_fraction,
            keep=unreadable_ids(loaded.report.unreadable, roots),
            embedder=embedder,
            ann_threshold=ann_threshold,
        )
        wrote = bool(plan.upserts or plan.removed or plan.full)
        return _report(store, plan, compacted, started, ingest=loaded.report, wrote=wrote)


def add_documents(
    documents: Sequence[Document],
    index: PathArg | None = None,
    *,
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
    wait: float = 0.0,
    compact_fraction: float | None = DEFAULT_COMPACT_FRACTION,
    progress: bool = False,
    embedder: _modes.EmbedderArg = None,
) -> IndexReport:
    """Insert or replace ``documents`` (by ``doc_id``) without touching any other document.

    Documents whose content hash is unchanged are left alone. A later ``index_paths``
    re-scan of the index's roots removes documents that are not under them. ``embedder``
    can only be set on a new index (see :func:`index_paths`).
    """
    started = time.perf_counter()
    with _writing(index, wait) as store:
        roots = list(_manifest(store).roots)
        plan, compacted = _write(
            store,
            documents,
            complete=False,
            roots=roots,
            chunk=chunk,
            bm25=bm25,
            progress=progress,
            compact_fraction=compact_fraction,
            embedder=embedder,
        )
        return _report(store, plan, compacted, started, wrote=bool(plan.upserts or plan.full))


def add_paths(
    paths: Sequence[PathArg],
    index: PathArg | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    wait: float = 0.0,
    compact_fraction: float | None = DEFAULT_COMPACT_FRACTION,
    progress: bool = False,
    follow_symlinks: bool = False,
) -> IndexReport:
    """Add or update the files (or folders) ``paths`` in an index, leaving the rest alone.

    Paths must lie under the index's roots (their ids are the ones a re-scan gives); an
    index without roots yet takes ``paths`` as its roots, like ``index_paths``. Symlinks
    leading outside the index's roots are skipped and named unless ``follow_symlinks``.

    Raises:
        InputError: A path named in ``paths`` cannot be read, or is a symlink leading
            outside the index's roots (nothing is written).
    """
    started = time.perf_counter()
    with _writing(index, wait) as store:
        roots = list(_manifest(store).roots)
        loaded = _ingest.load_paths(
            paths,
            max_bytes=max_bytes,
            progress=progress,
            follow_symlinks=follow_symlinks,
            within=roots or None,
        )
        problem = loaded.report.named_failure([os.fspath(p) for p in paths])
        if problem:
            raise InputError(f"cannot add {problem}; nothing was added")
        if not roots:
            roots = [str(Path(p).resolve()) for p in paths]
            docs = list(loaded.documents)
        else:
            docs = under_roots(loaded.documents, roots)
        plan, compacted = _write(
            store,
            docs,
            complete=False,
            roots=roots,
            chunk=None,
            bm25=None,
            progress=progress,
            compact_fraction=compact_fraction,
        )
        wrote = bool(plan.upserts or plan.full)
        return _report(store, plan, compacted, started, ingest=loaded.report, wrote=wrote)


def remove_documents(
    doc_ids: Sequence[str],
    index: PathArg | None = None,
    *,
    wait: float = 0.0,
    compact_fraction: float | None = DEFAULT_COMPACT_FRACTION,
) -> IndexReport:
    """Delete documents (and their chunks) by id; all of them, or none if one is unknown.

    A later ``index_paths`` re-scan adds a removed file back if it is still on disk.
    """
    started = time.perf_counter()
    with _writing(index, wait, create=False) as store:
        known = store.doc_hashes(list(doc_ids))
        missing = [d for d in doc_ids if d not in known]
        if missing:
            raise _NotFound(
                f"no document {', '.join(map(repr, missing))} in index {store.uri}: "
                f"nothing was removed; document ids are listed by `ctxselect search`"
            )
        roots = list(_manifest(store).roots)
        plan, compacted = _write(
            store,
            [],
            removed=list(dict.fromkeys(doc_ids)),
            complete=False,
            roots=roots,
            chunk=None,
            bm25=None,
            progress=False,
            compact_fraction=compact_fraction,
        )
        return _report(store, plan, compacted, started, wrote=bool(plan.removed))


def _open(index: PathArg | None) -> Store:
    return open_store(resolve_index_dir(index))


@contextlib.contextmanager
def _writing(index: PathArg | None, wait: float, *, create: bool = True) -> Iterator[Store]:
    """Open an index folder (created if missing, unless ``create`` is False) and hold its
    writer lock for one write; the store is closed afterwards."""
    WAIT.check(wait)
    folder = resolve_index_dir(index)
    store = (
        open_store(folder, create=True, wait=max(wait, DEFAULT_WAIT)) if create else _open(folder)
    )
    try:
        with store.lock(wait):
            yield store
    finally:
        store.close()


def compact_index(index: PathArg | None = None, *, wait: float = 0.0) -> CompactReport:
    """Merge every segment into one base: searches then equal a full rebuild exactly."""
    started = time.perf_counter()
    with _writing(index, wait, create=False) as store:
        manifest = _manifest(store)
        modes = _modes.stored_mode_ops(store, manifest)
        if manifest.state.base_rows is None:
            raise IndexNotFoundError(f"index {store.uri} holds nothing to compact yet")
        if not manifest.state.segments and not _compact.pending_rows(manifest):
            n = store.counts()["chunks"]
            return CompactReport(store.uri, n, 0, 0, 0.0, note="already compact")
        rows, merged, dropped = _compact_store(store, modes)
        seconds = round(time.perf_counter() - started, 3)
        return CompactReport(store.uri, rows, merged, dropped, seconds)


def verify_index(index: PathArg | None = None) -> VerifyReport:
    """Check an index's integrity; ``ok`` is False (with one line per problem) on damage.

    Leftover files of an interrupted write are removed when no writer is running.
    """
    folder = resolve_index_dir(index)
    try:
        store = _open(folder)
    except IndexNotFoundError:
        raise
    except CtxselectError as exc:
        return VerifyReport(folder, False, ("open",), (str(exc),))
    try:
        checks, problems, removed = store.verify()
        return VerifyReport(folder, not problems, tuple(checks), tuple(problems), tuple(removed))
    finally:
        store.close()


__all__ = [
    "add_documents",
    "add_paths",
    "compact_index",
    "index_paths",
    "remove_documents",
    "verify_index",
]

_ = _retrieve  # the import registers every retrieval mode

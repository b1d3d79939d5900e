"""The write path: index, add, remove, compact and verify an index folder.

Each verb scans or takes documents and hands them to :func:`ctxselect.api.sync.apply`,
which composes chunk -> index (segments) -> store. Every write holds the folder's writer
lock (a second writer gets a message naming the holder, or waits with ``wait``) and
commits in one transaction; searches in other processes keep reading the last committed
generation meanwhile.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxselect import ingest as _ingest
from ctxselect import retrieve as _retrieve
from ctxselect.api import modes as _modes
from ctxselect.api import parallel as _parallel
from ctxselect.api import sync as _sync
from ctxselect.api import write_inputs as _inputs
from ctxselect.api import write_options as _options
from ctxselect.api import write_session as _session
from ctxselect.api.read import Index, open_index
from ctxselect.config import (
    DEFAULT_COMPACT_FRACTION,
    BM25Params,
    ChunkSpec,
)
from ctxselect.embed.windows import DEFAULT_INDEX_EMBED_LONG
from ctxselect.errors import (
    ConfigError,
)
from ctxselect.errors import NotFoundError as _NotFound
from ctxselect.index.plan import under_roots, unreadable_ids
from ctxselect.types import Document, IndexReport

DEFAULT_MAX_BYTES = _ingest.DEFAULT_MAX_BYTES
DEFAULT_EXECUTOR = _ingest.DEFAULT_EXECUTOR
PathArg = str | os.PathLike[str]


def index_paths(
    paths: PathArg | Sequence[PathArg] | None = (),
    index: PathArg | None = None,
    *,
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
    max_bytes: int | None = None,
    progress: bool = False,
    wait: float = 0.0,
    compact_fraction: float | None = DEFAULT_COMPACT_FRACTION,
    embedder: _modes.EmbedderArg = None,
    ann_threshold: int | None = None,
    embed_long: str = DEFAULT_INDEX_EMBED_LONG,
    follow_symlinks: bool = False,
    workers: int = 1,
    executor: _parallel.ExecutorArg = _ingest.DEFAULT_EXECUTOR,
    ray_address: str | None = None,
    rebuild: bool = False,
) -> IndexReport:
    """Index files, folders or BEIR corpora into an index folder, touching only what changed.

    Re-scans ``paths`` (or the index's own roots), then adds new documents, re-chunks
    modified ones, deletes vanished ones and re-keys renamed ones (same content hash)
    without re-chunking them. Changed chunking or BM25 settings rebuild everything.

    Args:
        paths: Roots to scan: one path or several; empty (or None) means the roots the
            index was built from.
        index: Index folder (default: ``$CTXSELECT_INDEX`` or ``./.ctxselect``).
        chunk: Chunking settings; default: the index's own, else ``ChunkSpec()``.
        bm25: BM25 settings; default: the index's own, else ``BM25Params()``.
        max_bytes: Files larger than this are skipped and counted; default: the index's
            own, else 50,000,000. The limit used is recorded. A document already in the
            index whose file is now above the limit keeps its indexed version (named in
            the report's note): a lower limit never removes a document.
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
        embed_long: How the named embedder (or the index's own) embeds a chunk longer
            than its model reads (MiniLM: 256 word pieces): ``truncate`` (only its
            start), ``windows`` (whole, as pooled windows; 1.3-1.8x the embedding work)
            or ``auto`` (the default: the policy the index records; for an embedder new
            to the index, ``windows`` when most chunks are code, else ``truncate``,
            chosen once). A change to ``windows`` or ``truncate`` re-embeds the index.
        follow_symlinks: Read through symlinks whose target lies outside the roots too;
            by default they are skipped and named in the report (``outside_links``). Not
            remembered: a later run without it removes what was read through them.
        workers: Processes that chunk and embed new documents (1: this process, no pool).
            This process still scans, reads and writes; the index is the same either way.
        executor: Where the workers run: ``local`` (a process pool here) or ``ray`` (a
            Ray cluster; needs ``ctxselect[ray]``), or an
            :class:`~ctxselect.ingest.Executor` (then leave ``workers`` out).
        ray_address: With ``executor="ray"``: the cluster's address (``ray://HOST:10001``,
            ``HOST:6379``, ``auto``); default: start a local Ray bound to 127.0.0.1.
        rebuild: Re-chunk every document and write a new base even when nothing changed
            (vectors come from the index's cache, tuning and calibration are kept): how
            an index whose base file ``verify`` finds damaged is repaired in place.

    Returns:
        What changed; when nothing changed, nothing is written (``rebuilt`` is False).

    Raises:
        ConfigError: ``workers`` < 1, ``ray_address`` without the ray executor,
            ``embed_long`` not one of ``auto``, ``windows``, ``truncate``, ``chunk`` not
            a ChunkSpec, or no ``paths`` for an index without roots. A new index folder
            is made only once the paths and settings are valid.
        UnknownNameError: ``executor`` is not ``local`` or ``ray``.
        MissingExtraError: The ray executor without ``ctxselect[ray]``.
    """
    started = time.perf_counter()
    _options.check_write_options(
        compact_fraction, progress=progress, follow_symlinks=follow_symlinks, rebuild=rebuild
    )
    parallel = _parallel.executor_for(executor, workers, ray_address)
    asked = [str(Path(p).resolve()) for p in _inputs.path_list(paths)]
    _inputs.check_settings(chunk, bm25, embedder)
    skip = _inputs.index_location(index)[1]  # an index under a root is no document
    _inputs.check_outside_index(asked, skip, "index")
    _options.check_max_bytes(max_bytes)
    early: list[_ingest.IngestResult] = []

    def load(roots: list[str], limit: int) -> _ingest.IngestResult:
        return _ingest.load_paths(
            roots,
            max_bytes=limit,
            progress=progress,
            follow_symlinks=follow_symlinks,
            skip=[skip] if skip else [],
        )

    def before_create(uri: str) -> None:  # a new index: nothing is made unless this loads
        if not asked:
            raise ConfigError(
                f"no paths to index and index {uri} has no roots yet: "
                f"run `ctxselect index PATH... --index {uri}`"
            )
        early.append(load(asked, max_bytes or DEFAULT_MAX_BYTES))

    with parallel as pool, _session.writing(index, wait, before_create=before_create) as store:
        roots = asked or _inputs.recorded_roots(store)
        if not roots:
            before_create(store.uri)
        limit = max_bytes or _sync.read_manifest(store).max_bytes or DEFAULT_MAX_BYTES
        loaded = early[0] if early else load(roots, limit)
        unreadable = unreadable_ids(loaded.report.unreadable, roots)
        too_large = frozenset(loaded.report.too_large_ids)
        plan, compacted = _sync.apply(
            store,
            loaded.documents,
            complete=True,
            roots=roots,
            chunk=chunk,
            bm25=bm25,
            progress=progress,
            compact_fraction=compact_fraction,
            keep=lambda doc_id: unreadable(doc_id) or doc_id in too_large,
            embedder=embedder,
            ann_threshold=ann_threshold,
            executor=pool,
            embed_long=embed_long,
            rebuild=rebuild,
            max_bytes=limit,
        )
        _inputs.note_kept_too_large(plan, store, too_large, limit)
        wrote = bool(plan.upserts or plan.removed or plan.full)
        return _sync.make_report(store, plan, compacted, started, ingest=loaded.report, wrote=wrote)


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
    _options.check_write_options(compact_fraction, progress=progress)
    documents = _inputs.check_documents(documents)
    _inputs.check_settings(chunk, bm25, embedder)
    with _session.writing(index, wait) as store:
        roots = list(_sync.read_manifest(store).roots)
        plan, compacted = _sync.apply(
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
        wrote = bool(plan.upserts or plan.full)
        return _sync.make_report(store, plan, compacted, started, wrote=wrote)


def add_paths(
    paths: PathArg | Sequence[PathArg],
    index: PathArg | None = None,
    *,
    max_bytes: int | None = None,
    wait: float = 0.0,
    compact_fraction: float | None = DEFAULT_COMPACT_FRACTION,
    progress: bool = False,
    follow_symlinks: bool = False,
) -> IndexReport:
    """Add or update the files (or folders) ``paths`` in an index, leaving the rest alone.

    Paths must lie under the index's roots (their ids are the ones a re-scan gives); an
    index without roots yet takes ``paths`` as its roots, like ``index_paths``. Symlinks
    leading outside the index's roots are skipped and named unless ``follow_symlinks``.
    A file that is now empty (or whitespace only) is removed from the index, as the next
    re-scan would remove it.
    ``max_bytes``: as for :func:`index_paths` (default: the index's own; a given one is
    recorded).

    Raises:
        InputError: A path named in ``paths`` cannot be read, is a symlink leading
            outside the index's roots, or is a file that gives no document: of a type no
            loader handles, above ``max_bytes``, binary, or HTML without body text
            (nothing is written).
    """
    started = time.perf_counter()
    _options.check_write_options(
        compact_fraction, progress=progress, follow_symlinks=follow_symlinks
    )
    paths = _inputs.path_list(paths)
    skip = _inputs.index_location(index)[1]  # an index under a root is no document
    _inputs.check_outside_index(paths, skip, "add")
    _options.check_max_bytes(max_bytes)
    early: list[_ingest.IngestResult] = []

    def load(roots: list[str], limit: int) -> _ingest.IngestResult:
        loaded = _ingest.load_paths(
            paths,
            max_bytes=limit,
            progress=progress,
            follow_symlinks=follow_symlinks,
            within=roots or None,
            skip=[skip] if skip else [],
        )
        _inputs.check_named_loaded(loaded.report, paths)
        return loaded

    def before_create(_uri: str) -> None:
        early.append(load([], max_bytes or DEFAULT_MAX_BYTES))

    with _session.writing(index, wait, before_create=before_create) as store:
        manifest = _sync.read_manifest(store)
        roots = list(manifest.roots)
        limit = max_bytes or manifest.max_bytes or DEFAULT_MAX_BYTES
        loaded = early[0] if early else load(roots, limit)
        if not roots:
            roots = [str(Path(p).resolve()) for p in paths]
            docs = list(loaded.documents)
        else:
            docs = under_roots(loaded.documents, roots)
            named = [os.fspath(p) for p in paths]  # hidden or ignored: a re-scan drops it
            docs, loaded = _ingest.keep_rescannable(docs, roots, named, loaded)
        emptied = list(store.doc_hashes(list(loaded.report.empty_ids)))  # as a re-scan would
        plan, compacted = _sync.apply(
            store,
            docs,
            removed=emptied,
            complete=False,
            roots=roots,
            chunk=None,
            bm25=None,
            progress=progress,
            compact_fraction=compact_fraction,
            max_bytes=max_bytes,
        )
        wrote = bool(plan.upserts or plan.full or plan.removed)
        return _sync.make_report(store, plan, compacted, started, ingest=loaded.report, wrote=wrote)


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
    _options.check_write_options(compact_fraction)
    doc_ids = _inputs.doc_id_list(doc_ids)
    with _session.writing(index, wait, create=False) as store:
        known = store.doc_hashes(list(doc_ids))
        missing = [d for d in doc_ids if d not in known]
        roots = list(_sync.read_manifest(store).roots)
        if missing:
            hint = _inputs.unknown_ids_hint(missing, list(store.doc_hashes()), roots)
            raise _NotFound(
                f"no document{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                f"in index {store.uri}, so "
                f"nothing was removed: {hint}"
            )
        plan, compacted = _sync.apply(
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
        return _sync.make_report(store, plan, compacted, started, wrote=bool(plan.removed))


def executor_names() -> list[str]:
    """The executors ``index_paths`` can spread work over (``executor=``, ``--executor``)."""
    return _ingest.executor_names()


def build_index(
    paths: PathArg | Sequence[PathArg],
    index: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Index:
    """Index ``paths`` (see :func:`index_paths`) and open the result."""
    report = index_paths(paths, index, **options)
    return open_index(report.index)


__all__ = [
    "add_documents",
    "add_paths",
    "build_index",
    "executor_names",
    "index_paths",
    "remove_documents",
]

_ = _retrieve  # the import registers every retrieval mode

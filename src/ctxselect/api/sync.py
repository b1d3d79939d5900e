"""Bring a store in line with a set of documents: the one write every verb of ``write`` makes.

:func:`apply` plans what changed against the committed manifest, chunks what is new,
writes the modes' segments in one commit, then compacts or merges deltas when the policy
says so; :func:`make_report` says what a run did.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ctxselect import chunk as _chunk
from ctxselect import ingest as _ingest
from ctxselect.api import embedder_choice as _choice
from ctxselect.api import modes as _modes
from ctxselect.api import parallel as _parallel
from ctxselect.config import BM25Params, ChunkSpec
from ctxselect.errors import ConfigError, IndexWriteError
from ctxselect.index import compact as _compact
from ctxselect.index.plan import Plan, moved_chunks, plan_changes
from ctxselect.index.writer import ModeOps, chunk_documents, write_full, write_update
from ctxselect.manifest import EmbedderSpec, Manifest
from ctxselect.stores import Store
from ctxselect.types import Chunk, Document, IndexReport


def now() -> str:
    """The time now, as the manifest records it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_manifest(store: Store) -> Manifest:
    """The store's committed manifest, typed."""
    return Manifest.from_dict(store.read_manifest(), index=store.uri)


def _chunks(
    store: Store,
    plan: Plan,
    chunk: ChunkSpec,
    progress: bool,
    executor: _ingest.Executor | None,
) -> list[Chunk]:
    """The chunks a write commits: those of new documents (on the workers, with an
    ``executor``), and of renamed ones re-keyed from the store."""
    fresh = [d for d in plan.upserts if d.doc_id not in plan.renames]
    if executor is None:
        chunks = chunk_documents(fresh, _chunk.make_chunker(chunk).chunk, progress=progress)
    else:
        chunks = _parallel.chunk_documents(executor, fresh, chunk, progress=progress)
    if not plan.full:
        chunks += moved_chunks(store, plan.renames)
    return chunks


def _commit(
    store: Store,
    plan: Plan,
    chunks: list[Chunk],
    *,
    modes: Mapping[str, ModeOps],
    manifest: Mapping[str, Any],
    progress: bool,
    work: _parallel.Work | None = None,
) -> None:
    if work is not None and work.embedder is not None and _modes.has_vectors(modes):
        # the workers fill the vector cache; the dense writer below then embeds nothing,
        # so the speed info reports is theirs
        cache = store.vector_cache()
        began = time.perf_counter()
        done = _parallel.embed_missing(
            work.executor, chunks, cache, work.embedder, progress=progress
        )
        embedded = sum(len(batch.vectors) for batch in done)
        if embedded:
            seconds = time.perf_counter() - began
            workers = work.executor.workers
            measured = _modes.throughput(embedded, seconds, work.embedder.model_id, workers)
            manifest = {**manifest, **measured}
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
    write_update(
        store,
        upserts=plan.upserts,
        removed=plan.removed,
        chunks=chunks,
        modes=modes,
        manifest=manifest,
    )


def compact(store: Store, modes: Mapping[str, ModeOps]) -> tuple[int, int, int]:
    """Compact, then drop cached vectors no live chunk uses (bounded like the segments)."""
    done = _compact.compact_store(store, modes, {"compacted": now()})
    dense = read_manifest(store).embedder
    if _modes.has_vectors(modes) and dense is not None:
        _modes.prune_vectors(store, dense)
    return done


def _maintain(store: Store, modes: Mapping[str, ModeOps], fraction: float | None) -> bool:
    """Compact or consolidate deltas when the policy says so; True if compacted."""
    manifest = read_manifest(store)
    if _compact.needs_compaction(manifest, fraction):
        compact(store, modes)
        return True
    if _compact.needs_delta_merge(manifest):
        _compact.merge_store_deltas(store, modes)
    return False


def apply(
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
    executor: _ingest.Executor | None = None,
    embed_long: str | None = None,
    rebuild: bool = False,
    max_bytes: int | None = None,
) -> tuple[Plan, bool]:
    """Bring the store in line with ``docs`` (all of them if ``complete``); lock held.

    ``keep`` names documents a complete scan lacks but must not delete (their files
    exist but could not be read this time). With an ``executor``, new documents are
    chunked and embedded on its workers (:mod:`ctxselect.api.parallel`); this process
    still makes every write. ``rebuild`` (with ``complete`` only) rewrites every chunk
    and the base even when nothing changed: how a damaged base is repaired in place.
    ``embed_long`` ``auto`` (None too) lets a new dense side's chunks choose how long
    ones are embedded (:mod:`ctxselect.api.embedder_choice`). ``max_bytes`` is the file
    size limit to record (None: keep the index's); recorded even when nothing changed,
    so the next re-scan uses it.
    """
    old = read_manifest(store)
    chunk, bm25 = chunk or old.chunk, bm25 or old.bm25
    choice = _choice.resolve_embedder(old, embedder, ann_threshold, embed_long)
    dense = choice.spec
    known = old.built
    layout = _chunk.chunk_layout(chunk)  # the chunker changed how it cuts text: re-chunk
    keyword_changed = known and (
        chunk != old.chunk or layout != old.chunk_layout or bm25 != old.bm25
    )
    dense_changed = known and dense != old.embedder
    changed = keyword_changed or dense_changed
    if changed and not complete:
        if dense_changed or (chunk, bm25) != (old.chunk, old.bm25):
            raise _settings_differ(store, old, layout)
        # Only the chunker's layout moved (a newer ctxselect): the index holds every
        # document's text, so this write re-chunks them all, as a re-scan would, and an
        # index built by add_documents (no roots to re-scan) keeps taking updates.
        docs, complete = _with_stored(store, docs, removed), True
    modes = _modes.write_ops(_modes.WriteInputs(store, bm25, dense, choice.given, progress))
    stored = old.modes
    has_base = old.state.base_rows is not None
    forced = rebuild and complete
    rebuild = forced or not has_base or changed or (complete and set(stored) != set(modes))
    if not rebuild:  # a rebuild never reads the old base: it is how damage is repaired
        store.check_base()
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
        if max_bytes is not None and max_bytes != old.max_bytes:
            store.commit_settings({"max_bytes": max_bytes})
            said = f"settings recorded: max_bytes {max_bytes:,}, for the next re-scans"
            plan.note = f"{plan.note}; {said}" if plan.note else said
        # a run killed between its commit and its compaction left work pending: do it now
        return plan, _maintain(store, modes, compact_fraction)
    chunks = _chunks(store, plan, chunk, progress, executor)
    kinds = {d.doc_id: d.kind for d in plan.upserts}
    choice, chosen = _choice.decide_long(choice, chunks, kinds)
    if chosen is not None:  # auto chose the policy from the chunks: embed with it
        dense = choice.spec
        inputs = _modes.WriteInputs(store, bm25, dense, choice.given, progress)
        modes = _modes.write_ops(inputs, tuple(modes))
    model_changed = known and _model_id(dense) != _model_id(old.embedder)
    new_manifest = dataclasses.replace(
        _modes.tuned_settings(old, dense, model_changed),
        created=old.created or now(),
        updated=now(),
        roots=tuple(roots),
        chunk=chunk,
        chunk_layout=layout,
        bm25=bm25,
        modes=tuple(modes),
        embedder=dense,
        embed_long_auto=chosen.to_dict() if chosen else _choice.kept_auto(old, dense),
        max_bytes=old.max_bytes if max_bytes is None else max_bytes,
    )
    _note(plan, old, new_manifest, keyword_changed, dense_changed, model_changed)
    manifest = new_manifest.to_dict()
    work = _work(executor, dense, choice.given)
    _commit(store, plan, chunks, modes=modes, manifest=manifest, progress=progress, work=work)
    if plan.full and dense is not None:
        _modes.prune_vectors(store, dense)
    compacted = rebuild or _maintain_after_commit(store, modes, compact_fraction, plan)
    return plan, compacted


def _maintain_after_commit(
    store: Store, modes: Mapping[str, ModeOps], fraction: float | None, plan: Plan
) -> bool:
    """:func:`_maintain` once the update is committed: a compaction that fails (a full
    disk) leaves the update in place, so it is a note on the report, not the run's error."""
    try:
        return _maintain(store, modes, fraction)
    except IndexWriteError as exc:
        failed = (
            f"the update was committed, but compacting it afterwards failed ({exc}); searches "
            f"see the update; run ctxselect compact once the cause is fixed"
        )
        plan.note = f"{plan.note}; {failed}" if plan.note else failed
        return False


def _with_stored(store: Store, docs: Sequence[Document], removed: Sequence[str]) -> list[Document]:
    """``docs`` plus every stored document they do not replace, less ``removed``."""
    given = {d.doc_id for d in docs} | set(removed)
    kept = [store.get_document(i) for i in store.doc_hashes() if i not in given]
    return [*docs, *kept]


def _settings_differ(store: Store, old: Manifest, layout: str) -> ConfigError:
    return ConfigError(
        f"the index {store.uri} was built with other settings ({old.chunk}, chunk layout "
        f"{old.chunk_layout or 'unrecorded'}, {old.bm25}, embedder {old.embedder}): "
        f"change settings, or re-chunk with this ctxselect's chunkers (layout {layout}), "
        f"with `ctxselect index` (it rebuilds the index), not add"
    )


def _note(
    plan: Plan,
    old: Manifest,
    new: Manifest,
    keyword_changed: bool,
    dense_changed: bool,
    model_changed: bool,
) -> None:
    """Say in ``plan.note`` what a change of settings did to the index."""
    if keyword_changed and (new.chunk, new.bm25) == (old.chunk, old.bm25):
        plan.note = (
            f"the {new.chunk.chunker} chunker now cuts text differently (layout "
            f"{old.chunk_layout or 'unrecorded'} -> {new.chunk_layout}): every document "
            f"was re-chunked"
        )
    elif keyword_changed:
        plan.note = "settings changed: every document was re-chunked"
    elif dense_changed:
        plan.note = _dense_note(old.embedder, new.embedder)
        # a rebuild counts every document as updated; only the dense artefacts changed
        plan.updated, plan.unchanged = plan.modified, plan.updated - plan.modified
    if model_changed and old.fusion:
        plan.note += "; the embedder changed, so the tuned fusion was dropped (run tune again)"


def _work(
    executor: _ingest.Executor | None, dense: EmbedderSpec | None, given: Any
) -> _parallel.Work | None:
    if executor is None:
        return None
    source = None if dense is None else _parallel.embedder_source(dense, given, executor)
    return _parallel.Work(executor, source)


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


def make_report(
    store: Store,
    plan: Plan,
    compacted: bool,
    started: float,
    *,
    ingest: _ingest.IngestReport | None = None,
    wrote: bool = True,
) -> IndexReport:
    manifest = read_manifest(store)
    state = manifest.state
    counts = store.counts()
    skipped: dict[str, int] = {}
    # the code chunker cuts a file it cannot parse by tokens: name those of this run
    fallbacks = tuple(_chunk.token_fallbacks(plan.upserts, manifest.chunk.chunker))
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
    if fallbacks:
        skipped["code_as_tokens"] = len(fallbacks)
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
        skipped_files=ingest.skipped_files,
        token_fallbacks=fallbacks,
        replaced_files=ingest.replaced_files,
        partial_files=ingest.partial_files,
    )


__all__ = ["apply", "compact", "make_report", "now", "read_manifest"]

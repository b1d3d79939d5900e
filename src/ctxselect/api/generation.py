"""An opened index's committed generation: what every read verb of :class:`Index` reads.

A :class:`GenerationReader` holds the store, the generation it loaded and that
generation's retrievers, one per mode, loaded on first use. It reloads when a newer
generation commits, so readers never lock and never see a half-written one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, Self, cast

from ctxselect import embed as _embed
from ctxselect.config import RELOAD_CHECK_SECONDS, FuseSpec
from ctxselect.errors import IndexMismatchError, IndexNotFoundError
from ctxselect.manifest import Manifest
from ctxselect.retrieve.base import Retriever
from ctxselect.retrieve.modes import MODES, ModeContext, embedding_modes
from ctxselect.stores import ServingStore, Snapshot, Store, open_store
from ctxselect.types import ChunkTable


class GenerationReader:
    """Read one committed generation of a store at a time, without locks.

    Every call first asks the store (one cheap SQLite pragma) whether a newer generation
    was committed and reloads if so; base arrays are memory-mapped, so a reload reads the
    small delta segments, not the corpus. Chunk texts stay in memory up to
    ``TEXTS_IN_MEMORY_MAX`` chunks and are read per hit above that, so repeated queries
    on a small index never touch disk.
    """

    def __init__(self, store: Store, *, embedder: _embed.Embedder | str | None = None) -> None:
        self.store = store
        self._embedder = embedder
        self.path = store.uri
        self.manifest = store.read_manifest()
        # the typed manifest composition code reads; ``manifest`` stays the raw dict
        self.settings = Manifest.from_dict(self.manifest, index=self.path)
        self.chunk_spec, self.bm25 = self.settings.chunk, self.settings.bm25
        self._table: ChunkTable | None = None
        # (snapshot, its retrievers by mode): replaced as one value, so a thread never
        # pairs a snapshot with another generation's retrievers.
        self._state: tuple[Snapshot, dict[str, Retriever]] | None = None
        self._version = -1
        self._check_at = 0.0
        self._commits_seen = -1
        self._reload_lock = threading.Lock()
        self._lazy = False

    def _current(self, force: bool = False) -> tuple[Snapshot, dict[str, Retriever]]:
        """The committed generation to read, and its retrievers.

        A newer generation is looked for at most every ``RELOAD_CHECK_SECONDS`` (one
        SQLite pragma), at once after a commit made by this process, and always with
        ``force`` (inside a read transaction, where it pins what the search reads).
        """
        state = self._state
        if (
            not force
            and state is not None
            and time.monotonic() < self._check_at
            and self.store.local_commits() == self._commits_seen
        ):
            return state
        if not force and self.store.replaced():
            self._reopen()
        # Rows read per hit: the store's read lock before ours, the order ``_pinned`` takes
        # them (the other order deadlocked 8 threads searching one such index).
        pinned = self.store.reading() if self._lazy else contextlib.nullcontext()
        with pinned, self._reload_lock:
            self._commits_seen = self.store.local_commits()
            self._check_at = time.monotonic() + RELOAD_CHECK_SECONDS
            version = self.store.data_version()
            state = self._state
            if state is not None and version == self._version and not force:
                return state
            self._version = version
            if state is None or self.store.generation() != state[0].generation:
                fresh = self.store.snapshot(previous=state[0] if state else None)
                self.manifest = dict(fresh.manifest)
                self.settings = Manifest.from_dict(self.manifest, index=self.path)
                self.chunk_spec, self.bm25 = self.settings.chunk, self.settings.bm25
                self._table = None
                self._lazy = not isinstance(fresh.rows, ChunkTable)
                state = self._state = (fresh, {})
            return state

    def _reopen(self) -> None:
        """Open the index at :attr:`path` again: the one opened was deleted or replaced
        (``rm -rf`` and a new build while a server kept it open), and reading on would
        serve a deleted index. A reader still inside the old store finishes there; the
        old store closes when the last of them lets go of it.

        Raises:
            IndexNotFoundError: Nothing is there yet (a rebuild not finished): say so
                rather than serve what was deleted.
        """
        with self._reload_lock:
            if not self.store.replaced():
                return  # another thread reopened it meanwhile
            fresh = open_store(self.path)
            self.store, self._state, self._table, self._version = fresh, None, None, -1
            self.manifest = fresh.read_manifest()
            self.settings = Manifest.from_dict(self.manifest, index=self.path)
            self.chunk_spec, self.bm25 = self.settings.chunk, self.settings.bm25

    def _snapshot(self) -> Snapshot:
        return self._current()[0]

    def _recheck(self) -> None:
        """Make the next call look for a newer generation at once."""
        self._version = -1
        self._check_at = 0.0

    def _pinned(self, read: Callable[[Retriever], Any], mode: str | None) -> Any:
        """Run ``read`` on a generation whose rows cannot vanish meanwhile.

        Texts read per hit (large indexes) come from the store, so the search runs in
        one read transaction on the generation it loaded (reloaded if it is stale).
        """
        self._current()  # a replaced index is opened again before its read lock is taken
        with self.store.reading():
            self._current(force=True)
            try:
                return read(self.retriever(mode))
            except IndexNotFoundError:  # removed while read: the next call opens it again
                self._recheck()
                raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def table(self) -> ChunkTable:
        """Every live chunk as columns, chunk_id order (loaded once per generation)."""
        snap = self._snapshot()
        table = self._table
        if table is None:
            compacted = all(s.compacted for s in snap.segments.values())
            rows = snap.rows
            table = rows if isinstance(rows, ChunkTable) and compacted else self.store.chunk_table()
            self._table = table
        return table

    def retriever(self, mode: str | None = None) -> Retriever:
        """Return the retriever for ``mode`` (default: the index's default mode)."""
        snap, cache = self._current()
        found = cache.get(mode) if mode else None
        if found is not None:
            return found
        mode = mode or self.settings.default_mode
        found = cache.get(mode)
        return found if found is not None else self._load(mode, snap, cache)

    def _load(
        self, mode: str, snap: Snapshot, cache: dict[str, Retriever], *, local: bool = False
    ) -> Retriever:
        """Load ``mode`` into ``cache``: from the store when it ranks the mode itself
        (:class:`~ctxselect.stores.ServingStore`, a fusion too) unless ``local``, else from
        ``snap``'s segments. A fusion ranked here fuses its parts' client-side retrievers
        (it reads their internals), loaded under ``MODE@local`` when the store serves them."""
        spec = MODES.get(mode)
        embedder = self.embedder() if spec.needs_embedder else None
        context = ModeContext(self.bm25, embedder, self.fusion if spec.fuses else FuseSpec())
        if not local and self._served(mode, snap):
            found = cast(ServingStore, self.store).searcher(mode, snap, context)
        elif spec.combine is not None:
            parts = {m: self._part(m, snap, cache) for m in spec.fuses}
            found = spec.combine(parts, context)
        elif spec.load is None or mode not in snap.segments:
            rebuild = f"ctxselect index PATH... --index {self.path}"
            missing = f"has no {mode} arrays"
            if embedder is not None:
                rebuild = f"ctxselect index --index {self.path} --embedder {embedder.name}"
                missing = f"records an embedder but holds no {mode} vectors"
            raise IndexMismatchError(f"index {self.path} {missing}: rebuild it with `{rebuild}`")
        else:
            found = spec.load(snap.rows, snap.segments[mode], context)
        cache[f"{mode}@local" if local else mode] = found
        return found

    def local_retriever(self, mode: str) -> Retriever:
        """Return the client-side retriever of ``mode``, even where the store ranks it
        (tuning reads a fusion's internals, which a served mode does not have)."""
        snap, cache = self._current()
        return self._part(mode, snap, cache)

    def _served(self, mode: str, snap: Snapshot) -> bool:
        store = self.store
        return isinstance(store, ServingStore) and mode in store.served_modes(snap)

    def _part(self, mode: str, snap: Snapshot, cache: dict[str, Retriever]) -> Retriever:
        """A fusion's part: the client-side retriever of ``mode``."""
        local = self._served(mode, snap)
        found = cache.get(f"{mode}@local" if local else mode)
        return found if found is not None else self._load(mode, snap, cache, local=local)

    def embedder(self) -> _embed.Embedder:
        """The embedder of queries for dense retrieval (made once, on first use).

        Raises:
            IndexMismatchError: The index has no dense vectors, or was embedded with
                another model than the embedder this index was opened with.
        """
        spec = self.settings.embedder
        if spec is None:
            raise IndexMismatchError(
                f"index {self.path} has no dense vectors, so modes "
                f"{' and '.join(embedding_modes())} are not available: add them with "
                f"`ctxselect index --index {self.path} --embedder minilm` (the keyword index "
                f"is kept)"
            )
        given = self._embedder
        if given is None or isinstance(given, str):
            # made to match the index: one built before windows keeps its own model id
            made = _embed.make_embedder(given or spec.name, model_id=spec.model_id)
            given = self._embedder = made
        if given.model_id != spec.model_id:
            raise IndexMismatchError(
                f"index {self.path} was embedded with {spec.model_id!r} but queries "
                f"would be embedded with {given.model_id!r}: open it with the same embedder, "
                f"or rebuild it with `ctxselect index --index {self.path} --embedder "
                f"{given.name}`"
            )
        return given

    @property
    def fusion(self) -> FuseSpec:
        """How ``hybrid`` fuses: the spec ``tune`` stored, else plain RRF (k = 60)."""
        self._snapshot()  # reloads the manifest if a newer generation committed
        return self.settings.fusion or FuseSpec()

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()


__all__ = ["GenerationReader"]

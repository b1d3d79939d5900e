"""The filtered half of the read path: the rows a filtered search ranks, per generation.

:class:`FilteredReader` turns a :class:`~ctxselect.types.Filter` into a row mask of the
generation being read (once per generation and filter) and searches a retriever over
the rows it allows; :mod:`ctxselect.api.filters` holds the parsing and matching.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxselect import embed as _embed
from ctxselect.api import filters as _filters
from ctxselect.api.filters import Globs, RowFilter, Where
from ctxselect.api.generation import GenerationReader
from ctxselect.stores import Snapshot, Store
from ctxselect.types import Filter, Hit


class FilteredReader(GenerationReader):
    """A :class:`GenerationReader` whose searches may be restricted by a filter."""

    def __init__(self, store: Store, *, embedder: _embed.Embedder | str | None = None) -> None:
        super().__init__(store, embedder=embedder)
        # (the snapshot they were made for, row filters by Filter): made once per generation
        self._row_filters: tuple[object, dict[Filter, RowFilter]] = (None, {})

    def _ranked_many(
        self, retriever: Any, queries: Mapping[str, str], k: int, filter: Filter
    ) -> dict[str, list[Hit]]:
        """Search ``retriever`` over the rows ``filter`` allows (all without one)."""
        if not filter:
            return dict(retriever.search_many(queries, k))
        before = self._state
        snap, cache, found = self._filtered(filter)
        if all(r is not retriever for r in cache.values()):  # loaded before a reload
            retriever = self._reloaded(retriever, before, snap, cache)
        if not len(found.mask.rows):
            return {qid: [] for qid in queries}
        return dict(retriever.search_many(queries, k, mask=found.mask))

    def _row_filter(self, filter: Filter) -> RowFilter:
        """Apply ``filter`` to the rows of the generation being read (see :meth:`_filtered`).

        Raises:
            ConfigError: A ``where`` key the index does not store.
        """
        return self._filtered(filter)[2]

    def _filtered(self, filter: Filter) -> tuple[Snapshot, dict[str, Any], RowFilter]:
        """The generation to search, its retrievers, and ``filter`` applied to its rows.

        A row filter is made once per generation. Documents' metadata is read from the
        store, not the snapshot, so it is read in a pinned read of the snapshot's own
        generation; a reader still holding an older one (another process committed
        since) moves to the newer generation first, so a mask never judges one
        generation's rows by another's metadata.

        Raises:
            ConfigError: A ``where`` key the index does not store.
        """
        snap, cache = self._current()
        while True:
            made_for, found = self._row_filters
            if made_for is snap and filter in found:
                return snap, cache, found[filter]
            with self.store.reading():
                if self.store.generation() == snap.generation:
                    if made_for is not snap:
                        found = {}
                        self._row_filters = (snap, found)
                    found[filter] = _filters.filter_rows(
                        filter, snap.rows, self.store.document_fields, self.store.field_keys
                    )
                    return snap, cache, found[filter]
            snap, cache = self._current(force=True)  # committed since: read the new one

    def _reloaded(self, retriever: Any, before: Any, snap: Snapshot, cache: dict[str, Any]) -> Any:
        """The retriever of ``snap`` for the mode ``retriever`` ranked in state ``before``."""
        named = before[1].items() if before is not None else ()
        key = next((m for m, r in named if r is retriever), retriever.mode)
        found = cache.get(key)
        if found is None:
            mode, local = key.removesuffix("@local"), key.endswith("@local")
            found = self._load(mode, snap, cache, local=local)
        return found

    def note_for(self, filter: Filter) -> str:
        """Why a search with ``filter`` returned nothing ("" for an empty filter): the glob
        or ``where`` condition that left no document, or that no chunk of the documents it
        keeps matches the query.

        Raises:
            ConfigError: A ``where`` key the index does not store.
        """
        return _filters.empty_note(filter, self._row_filter(filter) if filter else None)

    def filter_note(
        self, *, include: Globs = None, exclude: Globs = None, where: Where = None
    ) -> str:
        """:meth:`note_for` the filter these arguments make (see :meth:`search`).

        Raises:
            ConfigError: An invalid glob or ``where`` condition, or an unknown key.
        """
        return self.note_for(_filters.make_filter(include, exclude, where))


__all__ = ["FilteredReader"]

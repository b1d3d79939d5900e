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
from ctxselect.stores import Store
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
        found = self._row_filter(filter)
        if not len(found.mask.rows):
            return {qid: [] for qid in queries}
        return dict(retriever.search_many(queries, k, mask=found.mask))

    def _row_filter(self, filter: Filter) -> RowFilter:
        """Apply ``filter`` to the current generation's rows (made once per generation).

        Raises:
            ConfigError: A ``where`` key the index does not store.
        """
        snap = self._snapshot()
        made_for, found = self._row_filters
        if made_for is not snap:
            found = {}
            self._row_filters = (snap, found)
        row_filter = found.get(filter)
        if row_filter is None:
            row_filter = found[filter] = _filters.filter_rows(
                filter, snap.rows, self.store.document_fields, self.store.field_keys
            )
        return row_filter

    def filter_note(
        self, *, include: Globs = None, exclude: Globs = None, where: Where = None
    ) -> str:
        """Why a search with this filter returned nothing ("" without a filter): the glob or
        ``where`` condition that left no document, or that no chunk of the documents it
        keeps matches the query."""
        filter = _filters.make_filter(include, exclude, where)
        return _filters.empty_note(filter, self._row_filter(filter) if filter else None)


__all__ = ["FilteredReader"]

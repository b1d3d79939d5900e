"""The search verbs of the read path: ranked chunks with their calibrated P(relevant).

:class:`SearchingReader` adds ``search``, ``search_many``, ``explain`` and the stored
P(relevant) calibration to a :class:`FilteredReader`; :class:`ctxselect.api.read.Index`
builds selection and inspection on top of it.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping

from ctxselect import embed as _embed
from ctxselect.api import filters as _filters
from ctxselect.api.filtered import FilteredReader
from ctxselect.api.filters import Globs, Where
from ctxselect.budget import calibration as _calibration
from ctxselect.config import DEFAULT_K
from ctxselect.errors import ConfigError
from ctxselect.stores import Store
from ctxselect.types import Explanation, Filter, Hit

# explain ranks this deep to give a chunk its P(relevant); below, P is left out (None)
EXPLAIN_P_DEPTH = 1000


def check_text(query: object, what: str = "query") -> str:
    """Return ``query`` if it is a string, else raise (``what`` names it in the message).

    Raises:
        ConfigError: ``query`` is None, bytes, a list, ...
    """
    if not isinstance(query, str):
        raise ConfigError(
            f"{what} must be a string, got {type(query).__name__} {query!r:.60}: "
            f"pass the text to look for"
        )
    return query


def check_query(query: object) -> str:
    """Return ``query`` if it is a string with something besides whitespace, else raise.

    Search, rank, select and explain refuse a blank query, as the MCP tools and the
    adapters do, instead of answering "no chunk matches" for a query never searched.

    Raises:
        ConfigError: ``query`` is not a string, or is empty or whitespace only.
    """
    check_text(query)
    if not str(query).strip():
        raise ConfigError(
            f"query is empty or whitespace only ({query!r:.20}), so there is nothing to rank "
            f"chunks by: pass the text to look for"
        )
    return str(query)


def check_k(k: object, fix: str = "pass how many ranked chunks to return, such as 10") -> int:
    """Return ``k`` if it is a whole number >= 1, else raise (``fix`` ends the message).

    Raises:
        ConfigError: ``k`` is below 1, a float, a str, None or a bool.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ConfigError(f"k must be a whole number of chunks >= 1, got {k!r}: {fix}")
    return int(k)


def check_queries(queries: object) -> Mapping[str, str]:
    """Return ``queries`` if it maps qids to query strings, else raise.

    Raises:
        ConfigError: A list or a single string instead of ``{qid: text}``, or a query
            that is not a string.
    """
    if not isinstance(queries, Mapping):
        raise ConfigError(
            f"queries must map a qid to each query's text, got {type(queries).__name__}: "
            f"pass {{qid: text}}, e.g. {{str(i): q for i, q in enumerate(texts)}} for a "
            f"list, or call search for one query"
        )
    for qid, query in queries.items():
        check_text(query, f"query {qid!r}")
    return queries


class SearchingReader(FilteredReader):
    """A :class:`FilteredReader` that searches and explains, with P(relevant) when calibrated."""

    def __init__(self, store: Store, *, embedder: _embed.Embedder | str | None = None) -> None:
        super().__init__(store, embedder=embedder)
        # (the settings they were read from, the calibrations by mode): parsed once per
        # generation, not on every search
        self._calibrations: tuple[object, dict[str, _calibration.Calibration]] = (None, {})

    def search(
        self,
        query: str,
        k: int = DEFAULT_K,
        mode: str | None = None,
        *,
        include: Globs = None,
        exclude: Globs = None,
        where: Where = None,
    ) -> list[Hit]:
        """Return the ``k`` best chunks for ``query``, best first.

        Each hit carries its calibrated ``p_relevant`` when the index is calibrated for
        the mode (``ctxselect tune``). ``include``/``exclude`` (gitignore globs over doc
        ids) and ``where`` (``key=value`` over stored metadata) restrict the ranking
        itself, so ``k`` hits come back whenever ``k`` matching chunks score; when none
        does, :meth:`filter_note` says why.

        Raises:
            ConfigError: An empty or whitespace-only ``query``, an invalid glob or
                ``where`` condition, or a ``where`` key the index does not store.
        """
        return self._search(query, k, mode, _filters.make_filter(include, exclude, where))

    def _search(self, query: str, k: int, mode: str | None, filter: Filter) -> list[Hit]:
        check_query(query)
        return self._search_many({"": query}, check_k(k), mode, filter)[""]

    def calibration(self, mode: str | None = None) -> _calibration.Calibration | None:
        """The P(relevant) calibration tuning stored for ``mode`` (None: uncalibrated)."""
        self._snapshot()  # reloads the manifest if a newer generation committed
        settings = self.settings
        read_from, found = self._calibrations
        if read_from is not settings:
            found = _calibration.calibrations(settings.calibration, settings.scoring())
            self._calibrations = (settings, found)
        return found.get(str(mode or settings.default_mode))

    def search_many(
        self,
        queries: Mapping[str, str],
        k: int = DEFAULT_K,
        mode: str | None = None,
        *,
        include: Globs = None,
        exclude: Globs = None,
        where: Where = None,
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}`` for every query (filtered as :meth:`search` filters).

        ``queries`` maps each qid to its text; the result has the same keys. A list of
        texts is refused, so no result is keyed by a position the caller did not choose.

        Raises:
            ConfigError: ``queries`` is not a mapping of strings, or a filter is invalid.
        """
        check_queries(queries)
        k = check_k(k)
        return self._search_many(queries, k, mode, _filters.make_filter(include, exclude, where))

    def _search_many(
        self, queries: Mapping[str, str], k: int, mode: str | None, filter: Filter
    ) -> dict[str, list[Hit]]:
        """:meth:`search` for every query: the same depth, the same P(relevant)."""
        retriever = self.retriever(mode)
        calibration = self.calibration(mode)
        # P reads the score distribution of the top STATS_DEPTH: rank that many, keep k
        depth = max(k, _calibration.STATS_DEPTH) if calibration is not None else k
        if self._lazy:
            ranked = self._pinned(lambda r: self._ranked_many(r, queries, depth, filter), mode)
        else:
            ranked = self._ranked_many(retriever, queries, depth, filter)
        return {qid: _calibration.with_p(hits, calibration)[:k] for qid, hits in ranked.items()}

    def explain(self, query: str, chunk_id: str, mode: str | None = None) -> Explanation:
        """Take the score of ``chunk_id`` for ``query`` apart, term by term.

        On an index calibrated for the mode, ``p_relevant`` is the chunk's P(relevant)
        as :meth:`search` gives it (None when it ranks below :data:`EXPLAIN_P_DEPTH`).
        """
        found = self._explain(query, chunk_id, mode)
        if self.calibration(mode) is None:
            return found
        ranked = self._search_many({"": query}, EXPLAIN_P_DEPTH, mode, _filters.make_filter())
        p = next((h.p_relevant for h in ranked[""] if h.chunk_id == chunk_id), None)
        return dataclasses.replace(found, p_relevant=p)

    def _explain(self, query: str, chunk_id: str, mode: str | None) -> Explanation:
        check_query(query)
        retriever = self.retriever(mode)
        if self._lazy:
            return self._pinned(lambda r: r.explain(query, chunk_id), mode)
        return retriever.explain(query, chunk_id)

    def explain_top(self, query: str, k: int = 3, mode: str | None = None) -> list[Explanation]:
        """Explain the ``k`` best chunks for ``query`` (with P(relevant) when calibrated)."""
        return [
            dataclasses.replace(self._explain(query, h.chunk_id, mode), p_relevant=h.p_relevant)
            for h in self.search(query, k, mode)
        ]


__all__ = [
    "EXPLAIN_P_DEPTH",
    "SearchingReader",
    "check_k",
    "check_queries",
    "check_query",
    "check_text",
]

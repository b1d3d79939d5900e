"""The read path: ``open_index`` returns an :class:`Index` that runs retrieve -> budget.

It imports no write-path module (ingest, chunk, index, :mod:`ctxselect.api.write`), so
``search``, ``select`` and the MCP server start without them; ``tests/test_architecture.py``
checks that in a fresh process.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Callable, Sequence
from typing import Any

from ctxselect import budget as _budget
from ctxselect import embed as _embed
from ctxselect import rerank as _rerank
from ctxselect import retrieve as _retrieve
from ctxselect import tokens as _tokens
from ctxselect.api import filters as _filters
from ctxselect.api.filters import Globs, Where
from ctxselect.api.inspecting import InspectingReader
from ctxselect.api.searching import check_k, check_text
from ctxselect.budget import stop as _stop
from ctxselect.budget.promote import promote_parents
from ctxselect.budget.stop import DEFAULT_STOP, check_stop
from ctxselect.config import (
    DEFAULT_BUDGET,
    DEFAULT_FORMAT,
    DEFAULT_PACKER,
    check_budget_range,
    resolve_index_dir,
)
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.retrieve.modes import (
    MODES,
    retriever_for,
    vector_mode,
)
from ctxselect.stores import Store, open_store
from ctxselect.types import (
    Filter,
    Hit,
    Selection,
)


def whole_budget(budget: object) -> int:
    """Return ``budget`` as an int if it is a whole number (range is the caller's to check).

    Raises:
        ConfigError: ``budget`` is a str, a float, None or a bool.
    """
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise ConfigError(
            f"budget must be a whole number of tokens, got {budget!r} ({type(budget).__name__}): "
            f"pass an int such as 2000"
        )
    return int(budget)


def check_select_k(k: object) -> int | None:
    """Return ``k`` if it is None (auto) or a whole number >= 1, as ``search`` and ``rank``
    require, else raise ConfigError."""
    fix = "pass None (the default) to consider enough ranked chunks to fill the budget"
    return None if k is None else check_k(k, fix)


def open_index(
    index: str | os.PathLike[str] | None = None, *, embedder: _embed.Embedder | str | None = None
) -> Index:
    """Open an existing index folder for reading.

    ``embedder`` embeds queries for the ``dense`` and ``hybrid`` modes (default: the one
    the index was built with, made on first use); it must be the model the index was
    embedded with, or those modes raise IndexMismatchError.
    """
    return Index(open_store(resolve_index_dir(index)), embedder=embedder)


class Index(InspectingReader):
    """An opened index: search, select, explain and inspect.

    Every call reads the newest committed generation (see :class:`GenerationReader`);
    filters restrict the rows it ranks (see :class:`FilteredReader`); search and explain
    come from :class:`SearchingReader`, ``info``, ``modes`` and lookups by id from
    :class:`InspectingReader`.
    """

    def __init__(self, store: Store, *, embedder: _embed.Embedder | str | None = None) -> None:
        super().__init__(store, embedder=embedder)
        self._rerankers: dict[str, _rerank.Reranker] = {}

    def select(
        self,
        query: str,
        budget: int = DEFAULT_BUDGET,
        *,
        mode: str | None = None,
        packer: str = DEFAULT_PACKER,
        format: str = DEFAULT_FORMAT,
        k: int | None = None,
        mmr: float | None = None,
        promote: bool = False,
        rerank_model: str | os.PathLike[str] | None = None,
        stop: str | float = _stop.DEFAULT_STOP,
        include: Globs = None,
        exclude: Globs = None,
        where: Where = None,
    ) -> Selection:
        """Select the best chunks for ``query`` within ``budget`` tokens, framing included.

        ``budget`` defaults to :data:`DEFAULT_BUDGET` (2,000), as in ``ctxselect select``.

        ``k`` bounds how many ranked chunks are considered (default: enough to fill the
        budget with chunks of the index's typical size, at least 50). ``mmr`` and
        ``rerank_model`` reorder them first (see :meth:`rank`); ``promote`` then sends
        whole sections for their selected children (see :meth:`promote`). ``stop``
        (see :mod:`ctxselect.budget.stop`): ``none`` fills the budget; a number P keeps
        chunks while their calibrated P(relevant) >= P; ``auto`` uses the threshold
        tuning stored for the mode, or the uncalibrated largest-score-gap rule.
        ``Selection.stop`` says why it stopped; the budget is always a hard cap.
        ``include``, ``exclude`` and ``where`` filter the ranking as in :meth:`search`;
        a filter that leaves nothing gives an empty selection whose ``note`` says which.

        Raises:
            ConfigError: ``stop`` is not ``auto``, ``none`` or a number in [0, 1], or a
                number on an index (or reordering) without P(relevant); an invalid filter;
                ``query`` not a string or blank, ``budget`` not a whole number from 100 to
                100,000,000 (as the CLI, MCP and the adapters), ``k`` below 1, ``promote``
                not a bool. Smaller budgets: :meth:`select_ranked` on :meth:`rank`.
        """
        _stop.check_stop(stop)
        budget = check_budget_range(whole_budget(budget))  # the CLI's, MCP's, adapters' range
        k = check_select_k(k)
        if not isinstance(promote, bool):
            raise ConfigError(
                f"promote must be True or False, got {promote!r}: True sends whole "
                f"sections for their selected children"
            )
        filter = _filters.make_filter(include, exclude, where)
        depth = k or self.depth(budget)
        hits = self._rank(query, depth, mode, mmr=mmr, rerank_model=rerank_model, filter=filter)
        selection = self.select_ranked(
            hits, budget, mode=mode, packer=packer, format=format, promote=promote, stop=stop
        )
        if filter and not hits:
            selection = dataclasses.replace(selection, note=self.note_for(filter))
        if selection.stop == _stop.NO_MORE and len(hits) >= depth:  # the cap, not the matches
            asked = f"-k {k}; a larger k ranks more" if k else "the depth ranked for this budget"
            ended = f"{_stop.RANKING_END}: all {len(hits)} ranked chunks considered ({asked})"
            selection = dataclasses.replace(selection, stop=ended)
        return selection

    def select_ranked(
        self,
        hits: Sequence[Hit],
        budget: int,
        *,
        mode: str | None = None,
        packer: str = DEFAULT_PACKER,
        format: str = DEFAULT_FORMAT,
        promote: bool = False,
        stop: str | float = _stop.DEFAULT_STOP,
    ) -> Selection:
        """:meth:`select` on ``hits`` already ranked by :meth:`rank` in ``mode`` (callers
        that select several budgets from one ranking search once)."""
        calibration = self.calibration(mode)
        cut = _stop.cut_hits(
            hits,
            stop,
            calibration.threshold if calibration else None,
            calibration.chunk_tokens if calibration else None,
        )
        selection = self._packer(packer, format).pack(cut.kept, budget)
        selection = self.promote(selection) if promote else selection
        return _stop.finish(selection, cut, lambda hit: self.frame_tokens(hit, format))

    def rank(
        self,
        query: str,
        k: int,
        mode: str | None = None,
        *,
        mmr: float | None = None,
        rerank_model: str | os.PathLike[str] | None = None,
        include: Globs = None,
        exclude: Globs = None,
        where: Where = None,
    ) -> list[Hit]:
        """Return the ``k`` best chunks, reranked as :meth:`select` considers them.

        Args:
            query: The query.
            k: Chunks to rank.
            mode: Retrieval mode (default: the index's).
            mmr: Reorder by maximal marginal relevance with this λ (1: relevance only,
                lower: more diverse), comparing the chunks' dense vectors.
            rerank_model: A cross-encoder folder on disk to rerank the hits with first.
            include: Gitignore globs over doc ids; only matching documents are ranked.
            exclude: Gitignore globs over doc ids; matching documents are not ranked.
            where: ``key=value`` conditions over stored metadata (see :meth:`search`).

        Raises:
            ConfigError: ``mmr`` is outside [0, 1], or the index has no dense vectors;
                an invalid filter.
            ModelNotFoundError: ``rerank_model`` is not a model folder.
        """
        filter = _filters.make_filter(include, exclude, where)
        return self._rank(query, k, mode, mmr=mmr, rerank_model=rerank_model, filter=filter)

    def _rank(
        self,
        query: str,
        k: int,
        mode: str | None,
        *,
        mmr: float | None,
        rerank_model: str | os.PathLike[str] | None,
        filter: Filter,
    ) -> list[Hit]:
        hits = self._search(query, k, mode, filter)
        if rerank_model is not None:
            hits = self._reranker(rerank_model).rerank(query, hits)
        if mmr is not None:
            if self.settings.embedder is None:
                raise ConfigError(
                    f"mmr compares the chunks' dense vectors and index {self.path} has none: "
                    f"add them with `ctxselect index --index {self.path} --embedder minilm`, "
                    f"or select without mmr"
                )
            dense: Any = self.retriever(vector_mode())
            hits = _rerank.MMRReranker(dense.vectors_of, mmr).rerank(query, hits)
        return hits

    def promote(self, selection: Selection) -> Selection:
        """Replace selected children of a section with the whole section where it fits.

        Sections are the parents the markdown chunker records (``Chunk.parent_id``); a
        parent is sent when at least two of its chunks, and half of them, were selected
        and the budget still holds (see ``budget.promote``).
        """
        doc_ids = list(dict.fromkeys(p.doc_id for p in selection.chunks))
        parent_of = {c.chunk_id: c.parent_id for c in self.store.chunks_of(doc_ids)}
        counter = _tokens.get_counter(self.chunk_spec.tokenizer)
        return promote_parents(selection, parent_of, self.store.span_text, counter)

    def _reranker(self, path: str | os.PathLike[str]) -> _rerank.Reranker:
        key = os.fspath(path)
        if key not in self._rerankers:
            self._rerankers[key] = _rerank.make_reranker("cross-encoder", model=key)
        return self._rerankers[key]

    def render(self, selection: Selection, format: str | None = None) -> str:
        """Render a selection as the context block a prompt would contain.

        The default format is the one the selection was packed (and costed) in.
        """
        return _budget.render(selection, format)

    def _packer(self, name: str, format: str) -> Any:
        counter = _tokens.get_counter(self.chunk_spec.tokenizer)
        return _budget.make_packer(name, counter, format=format, span_text=self.store.span_text)

    # Building blocks for callers that choose their own candidates (agent/sessions.py).

    def count_tokens(self, text: str) -> int:
        """Count ``text`` in the tokenizer the index was built with.

        Raises:
            ConfigError: ``text`` is not a string.
        """
        check_text(text, "text")
        return int(_tokens.get_counter(self.chunk_spec.tokenizer).count(text))

    def depth(self, budget: int) -> int:
        """Return how many ranked chunks :meth:`select` considers for ``budget``."""
        budget = whole_budget(budget)
        self._snapshot()  # reloads the manifest if a newer generation committed
        counts = self.settings.state.counts or self.store.counts()
        chunks, tokens = int(counts.get("chunks", 0)), int(counts.get("tokens", 0))
        return _budget.depth_for_budget(budget, tokens / chunks if chunks else 1.0)

    def pack(
        self,
        hits: Sequence[Hit],
        budget: int,
        *,
        packer: str = DEFAULT_PACKER,
        format: str = DEFAULT_FORMAT,
    ) -> Selection:
        """Fit ranked ``hits`` (best first) into ``budget`` tokens exactly as :meth:`select` does.

        For callers that filter or reshape the candidates first, such as a session that
        leaves out the chunks it has already delivered.
        """
        return self._packer(packer, format).pack(hits, budget)

    def frame_tokens(self, hit: Hit, format: str = DEFAULT_FORMAT) -> int:
        """Return what ``hit`` alone costs in a selection: its framed piece, in tokens."""
        piece = _budget.frame(hit.doc_id, hit.start, hit.end, hit.header, hit.text, format)
        return self.count_tokens(piece)


def _chunkers() -> list[str]:
    from ctxselect.chunk import CHUNKERS  # a write-path stage: loaded when its names are asked

    return CHUNKERS.names()


def names(kind: str) -> list[str]:
    """Return the valid registry names of ``kind``: chunker, tokenizer, mode, packer, format,
    embedder.

    The CLI and the MCP server list choices from here, so they never drift from the code.
    """
    listed: dict[str, Callable[[], list[str]]] = {
        "chunker": _chunkers,
        "tokenizer": _tokens.TOKENIZERS.names,
        "mode": MODES.names,
        "packer": _budget.PACKERS.names,
        "format": _budget.FORMATS.names,
        "embedder": _embed.EMBEDDERS.names,
    }
    if kind not in listed:
        raise UnknownNameError("registry", kind, listed)
    return listed[kind]()


__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_STOP",
    "Index",
    "check_select_k",
    "check_stop",
    "names",
    "open_index",
    "retriever_for",
    "whole_budget",
]

_ = _retrieve  # the import registers every retrieval mode

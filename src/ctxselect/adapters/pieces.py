"""A budgeted selection as framework-neutral pieces: id, text, score and flat metadata.

Both framework retrievers check their options here once, when they are made, and turn
each :class:`~ctxselect.types.SelectedChunk` of an ``Index.select`` result into a
:class:`Piece`. Frameworks return a plain list of documents or nodes, with no place for
the selection as a whole, so each piece's metadata also carries the selection's
``tokens_used``, ``budget``, ``stop`` and ``threshold`` (the keys of ``Selection``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxselect import api
from ctxselect.agent import limits, lookups
from ctxselect.api.read import check_select_k
from ctxselect.config import DEFAULT_FORMAT, DEFAULT_PACKER
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.types import SelectedChunk, Selection

IndexLike = api.Index | str | os.PathLike[str]
"""What a retriever takes: an opened :class:`~ctxselect.api.Index` or an index folder."""

FRAMEWORK_NAMES = {"top_k": "k", "similarity_top_k": "k", "search_kwargs": "k"}
"""The frameworks' usual retriever arguments, and ctxselect's name for what they ask."""

PROMPT_KEYS = ("doc_id", "header")
"""Metadata a framework may show the model next to a piece's text; the rest is bookkeeping."""


@dataclass(frozen=True, slots=True)
class SelectOptions:
    """The arguments of ``Index.select`` a retriever passes on every query.

    Attributes:
        budget: Tokens of context per query, framing included (a hard cap).
        mode: Retrieval mode (default: the index's).
        stop: ``auto``, ``none`` or a P(relevant) threshold (see ``Index.select``).
        packer: Packer name (``skip``, ``greedy``, ``knapsack``).
        format: Framing the pieces are costed in (``markdown``, ...).
        k: Ranked chunks considered (default: enough to fill the budget).
        mmr: Maximal marginal relevance λ, on an index with dense vectors.
        promote: Send whole sections for their selected children.
    """

    budget: int = limits.DEFAULT_BUDGET
    mode: str | None = None
    stop: str | float = api.DEFAULT_STOP
    packer: str = DEFAULT_PACKER
    format: str = DEFAULT_FORMAT
    k: int | None = None
    mmr: float | None = None
    promote: bool = False


@dataclass(frozen=True, slots=True)
class Piece:
    """One selected piece as a framework document or node is made from it.

    Attributes:
        id: The chunk id, or the ids of merged adjacent chunks joined by ``+``.
        doc_id: The document the piece is from.
        text: ``document.text[start:end]`` (the header is in ``metadata``).
        start: Offset of the piece in its document's normalised text.
        end: End offset (exclusive).
        score: The piece's retrieval score (higher is better).
        metadata: Flat JSON values: the piece's fields and the selection's.
    """

    id: str
    doc_id: str
    text: str
    start: int
    end: int
    score: float
    metadata: Mapping[str, object] = field(default_factory=dict)


def check_names(owner: str, given: Iterable[str], valid: Collection[str]) -> None:
    """Refuse keyword arguments ``owner`` does not take, naming a close valid one.

    Pydantic (LangChain) would ignore them and ``top_k=5`` would select as if unset.

    Raises:
        ConfigError: Some of ``given`` are not in ``valid``.
    """
    unknown = [name for name in given if name not in valid]
    for name in unknown:
        if name in FRAMEWORK_NAMES:
            raise ConfigError(
                f"unknown argument {name!r} (did you mean {FRAMEWORK_NAMES[name]!r}?): "
                f"{owner} takes ctxselect's names, {', '.join(sorted(valid))}; the budget, "
                f"not k, bounds how much it returns"
            )
    if unknown:
        raise ConfigError(limits.unknown_arguments(owner, unknown, sorted(valid)))


def option_names() -> tuple[str, ...]:
    """The keyword arguments of :class:`SelectOptions`: ``Index.select``'s, by name."""
    return tuple(f.name for f in dataclasses.fields(SelectOptions))


def as_fields(options: SelectOptions) -> dict[str, Any]:
    """The options as keyword arguments, by name (a retriever's fields)."""
    return {name: getattr(options, name) for name in option_names()}


def open_or_take(index: IndexLike) -> api.Index:
    """Return ``index`` if it is an opened index, else open the folder it names.

    Raises:
        IndexNotFoundError: No index in that folder.
    """
    if isinstance(index, api.Index):
        return index
    return api.open_index(index)


def check_options(index: api.Index, options: SelectOptions) -> SelectOptions:
    """Return ``options`` with ``stop`` normalised, or raise if ``index`` cannot apply them.

    Checked as the CLI and the MCP server check them, types included, so a bad option
    fails when the retriever is made, not on every query.

    Raises:
        ConfigError: A budget that is not a whole number or is below the minimum; a bad
            stop rule, k, mmr or promote; a mode (or mmr) that needs dense vectors on an
            index without them; or a P(relevant) threshold the index cannot apply.
        UnknownNameError: An unknown mode, packer or format.
    """
    budget = limits.check_budget(options.budget, None)
    mmr = limits.check_mmr(options.mmr)
    check_select_k(options.k)
    if not isinstance(options.promote, bool):
        raise ConfigError(
            f"promote must be True or False, got {options.promote!r}: True sends whole "
            f"sections for their selected children"
        )
    if options.mode is not None and not isinstance(options.mode, str):
        raise UnknownNameError("mode", options.mode, api.names("mode"))
    for kind, name in (("packer", options.packer), ("format", options.format)):
        if not isinstance(name, str) or name not in api.names(kind):
            raise UnknownNameError(kind, name, api.names(kind))
    mode = lookups.resolve_mode(index, options.mode or index.settings.default_mode, options.mmr)
    stop = lookups.check_stop(index, mode, options.stop)
    if isinstance(stop, float) and options.mmr is not None:
        raise ConfigError(
            f"stop={stop:g} keeps chunks while their P(relevant) is at least {stop:g}, and "
            f"mmr={options.mmr:g} reorders the ranking, which leaves no P(relevant) to read: "
            f"pass stop auto or none with mmr, or leave mmr out"
        )
    return dataclasses.replace(options, budget=budget, stop=stop, mmr=mmr)


def select(index: api.Index, query: str, options: SelectOptions) -> Selection:
    """Run ``Index.select`` for ``query`` with ``options``.

    A query of any length ``Index.select`` answers is answered (MCP's
    ``MAX_QUERY_CHARS`` bounds what a model sends a server, not what a program asks).

    Raises:
        ConfigError: ``query`` is not a string or is empty.
    """
    limits.check_query(query, sys.maxsize)
    return index.select(
        query,
        options.budget,
        mode=options.mode,
        packer=options.packer,
        format=options.format,
        k=options.k,
        mmr=options.mmr,
        promote=options.promote,
        stop=options.stop,
    )


def pieces(selection: Selection) -> list[Piece]:
    """Return the selection's pieces in prompt order, each with its metadata."""
    return [
        Piece(
            piece_id(chunk),
            chunk.doc_id,
            chunk.text,
            chunk.start,
            chunk.end,
            chunk.score,
            metadata(selection, chunk, rank),
        )
        for rank, chunk in enumerate(selection.chunks, start=1)
    ]


def piece_id(chunk: SelectedChunk) -> str:
    """The chunk id of a one-chunk piece; the merged chunks' ids joined by ``+``."""
    return "+".join(chunk.chunk_ids)


def metadata(selection: Selection, chunk: SelectedChunk, rank: int) -> dict[str, object]:
    """Flat metadata of one piece: its own fields, then the selection's.

    ``chunk_id`` is the piece's first chunk (an id ``Index.get_chunk`` and ``explain``
    take); ``chunk_ids`` lists all of them. ``tokens`` is what the piece costs in the
    budget, framing included; ``n_tokens`` its text alone. ``rank`` is its place in the
    selection (prompt order, from 1).
    """
    return {
        "doc_id": chunk.doc_id,
        "header": chunk.header,
        "chunk_id": chunk.chunk_ids[0],
        "chunk_ids": list(chunk.chunk_ids),
        "start": chunk.start,
        "end": chunk.end,
        "score": chunk.score,
        "p_relevant": chunk.p_relevant,
        "tokens": chunk.tokens,
        "n_tokens": chunk.n_tokens,
        "rank": rank,
        "tokens_used": selection.tokens_used,
        "budget": selection.budget,
        "stop": selection.stop,
        "threshold": selection.threshold,
    }

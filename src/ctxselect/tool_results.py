"""The values of session-aware selection (``agent/``): the MCP server's tool results.

Frozen dataclasses, like the values of :mod:`ctxselect.types`; each is what one session
tool returns, and ``dataclasses.asdict`` of it is the structured content MCP clients
receive (``docs/formats.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ctxselect.types import DroppedChunk, Hit


class Metered(Protocol):
    """What every session tool's result carries: its call number and its measured size.

    :class:`ContextResult`, :class:`SearchResult` and :class:`Passage` declare these
    fields (the first two also ``query``, ``mode``, ``references``, ``tokens_used``) each
    in its own place, not through a shared dataclass base: a field's place is its key's
    place in the JSON MCP clients receive (``tests/interfaces/test_mcp_result_json.py``),
    and a base would move its fields to the front. (Their docstrings are served too, as
    the MCP tools' output schema descriptions.)

    Attributes:
        call: The number of this call in its session, from 1.
        result_tokens: The size of this whole result as the caller receives it, in the
            index's tokenizer, never above ``max_result_tokens``.
        session_tokens: ``result_tokens`` of every result the session has received, this
            one included.
        max_result_tokens: The cap on any one result.
        note: What the caller should know (why a result is empty or was cut).
    """

    @property
    def call(self) -> int: ...

    @property
    def session_tokens(self) -> int: ...

    @property
    def result_tokens(self) -> int: ...

    @property
    def max_result_tokens(self) -> int: ...

    @property
    def note(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ContextPiece:
    """New context in a session-aware selection: one chunk, or adjacent chunks merged.

    ``tokens`` is what the piece costs in the budget, framing included (as in
    :class:`SelectedChunk`). ``line_start``/``line_end`` are 1-based lines of the
    document. ``text`` is empty when the caller asked for ids only.
    """

    chunk_ids: tuple[str, ...]
    doc_id: str
    start: int
    end: int
    line_start: int
    line_end: int
    header: str
    score: float
    tokens: int
    text: str


@dataclass(frozen=True, slots=True)
class ContextReference:
    """A ranked chunk the session already received, sent as a short reference instead.

    ``text`` is the reference line the caller reads; ``tokens`` is what it costs;
    ``tokens_saved`` is what re-sending the chunk would have cost, minus ``tokens``.
    ``call`` is the number of the session's call that delivered the chunk.
    """

    chunk_id: str
    doc_id: str
    start: int
    end: int
    line_start: int
    line_end: int
    rank: int
    call: int
    tokens: int
    tokens_saved: int
    text: str


@dataclass(frozen=True, slots=True)
class ContextResult:
    """What ``Sessions.select`` (MCP ``select``) returns: new pieces, references, their cost.

    ``tokens_used`` (pieces plus reference lines) never exceeds ``budget``.
    ``result_tokens`` is the size of this whole result as the caller receives it (text
    block plus compact metadata, ``sessions.context_wire``), never above
    ``max_result_tokens``; ``session_tokens`` adds up ``result_tokens`` of every result
    the session has received, this one included. ``dropped`` lists the first ranked
    chunks left out (``dropped_total`` counts them all). ``stop`` says why the selection
    of new material stopped, as ``Selection.stop`` does.
    """

    query: str
    mode: str
    detail: str
    pieces: tuple[ContextPiece, ...]
    references: tuple[ContextReference, ...]
    dropped: tuple[DroppedChunk, ...]
    dropped_total: int
    tokens_used: int
    budget: int
    tokens_saved: int
    call: int
    session_tokens: int
    result_tokens: int
    max_result_tokens: int
    note: str = ""
    stop: str = ""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What ``search`` returns in a session: ranked hits with their text, except those
    the session already has, which come back as references (same accounting as
    :class:`ContextResult`; ``tokens_used`` counts hit texts and reference lines)."""

    query: str
    mode: str
    k: int
    hits: tuple[Hit, ...]
    references: tuple[ContextReference, ...]
    tokens_used: int
    call: int
    session_tokens: int
    result_tokens: int
    max_result_tokens: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class Passage:
    """A span of one document's text, as ``get_chunk`` and ``get_document`` return it.

    ``text == document.text[start:end]``. ``truncated`` says the span was cut to stay
    within the span or result limits; ``next_start`` is where to continue (None at the
    end of the document). ``chunk_ids`` are the chunks lying wholly inside the span.
    """

    doc_id: str
    start: int
    end: int
    line_start: int
    line_end: int
    doc_chars: int
    header: str
    chunk_ids: tuple[str, ...]
    tokens: int
    truncated: bool
    next_start: int | None
    text: str
    call: int
    session_tokens: int
    result_tokens: int
    max_result_tokens: int
    note: str = ""

"""``select`` (and ``search``) in a session: chunks the session has come back as references.

The plain selection's chunks that the session received (unchanged since) are sent as
references; the budget they would have used goes to new material (see
:func:`ctxselect.agent.material.new_material`). The result is fitted under the cap, and
what it sends counts as received (nothing with ``detail="ids"``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxselect.agent import limits
from ctxselect.agent.material import Ask, new_material
from ctxselect.agent.memory import SessionState
from ctxselect.agent.results import Meter, shrink_context, shrink_search
from ctxselect.agent.spans import DocSpans
from ctxselect.api.read import Index
from ctxselect.tool_results import ContextResult, SearchResult
from ctxselect.types import Filter, Hit, Selection


def select_context(
    spans: DocSpans,
    meter: Meter,
    state: SessionState,
    ask: Ask,
    budget: int,
    *,
    detail: str,
    refresh: bool,
    promote: bool,
) -> ContextResult:
    """Select for ``ask`` within ``budget`` minus what ``state`` has; record what is sent."""
    index = spans.index
    hits = ask.rank(index)
    known = {} if refresh else state.known(spans, hits)
    calls = {c: seen.call for c, seen in known.items()}
    plain = ask.select(index, hits, budget)
    refs = spans.references(plain, hits, calls, budget)
    received = set() if refresh else set(state.received(spans))  # hits or not
    left = budget - sum(r.tokens for r in refs)
    selection = new_material(
        spans, ask, hits, known, left, received=received, detail=detail, promote=promote
    )
    pieces = tuple(spans.piece(c, with_text=detail != "ids") for c in selection.chunks)
    result = ContextResult(
        query=ask.query,
        mode=ask.mode,
        detail=detail,
        pieces=pieces,
        references=refs,
        dropped=selection.dropped[: limits.SHOWN_DROPPED],
        dropped_total=len(selection.dropped),
        tokens_used=selection.tokens_used + sum(r.tokens for r in refs),
        budget=budget,
        tokens_saved=sum(r.tokens_saved for r in refs),
        call=state.calls + 1,
        session_tokens=0,
        result_tokens=0,
        max_result_tokens=meter.cap,
        note=context_note(hits, selection, refs, empty_note(index, ask.filter), plain.note),
        stop=selection.stop,
    )
    result = meter.fit(result, state.tokens, shrink_context)
    sent = [] if detail == "ids" else [(p.doc_id, p.start, p.end) for p in result.pieces]
    ids = [] if detail == "ids" else [c for p in result.pieces for c in p.chunk_ids]
    state.deliver(spans, result.call, result.result_tokens, sent, ids)
    return result


def search_context(
    spans: DocSpans,
    meter: Meter,
    state: SessionState,
    query: str,
    k: int,
    mode: str,
    filter: Filter,
) -> SearchResult:
    """The ``k`` best chunks for ``query``, ones ``state`` has as references; record what is
    sent."""
    index = spans.index
    hits = index.search(
        query, k, mode, include=filter.include, exclude=filter.exclude, where=filter.where
    )
    known = state.known(spans, hits)
    refs = tuple(
        spans.reference(h, known[h.chunk_id].call, h.n_tokens) for h in hits if h.chunk_id in known
    )
    new = tuple(h for h in hits if h.chunk_id not in known)
    used = sum(h.n_tokens for h in new) + sum(r.tokens for r in refs)
    note = "" if hits else empty_note(index, filter) or "no chunk matches the query"
    result = SearchResult(query, mode, k, new, refs, used, state.calls + 1, 0, 0, meter.cap, note)
    result = meter.fit(result, state.tokens, shrink_search)
    sent = [(h.doc_id, h.start, h.end) for h in result.hits]
    state.deliver(spans, result.call, result.result_tokens, sent)
    return result


def empty_note(index: Index, filter: Filter) -> str:
    """Why a search with ``filter`` found nothing ("" without a filter)."""
    return index.note_for(filter)


def context_note(
    hits: Sequence[Hit],
    selection: Selection,
    refs: Sequence[object],
    empty: str = "",
    plain: str = "",
) -> str:
    """The note of a session-aware selection: why it is empty, or the selection's own.

    ``plain`` is the note of the session-less selection: when that chose nothing (no
    chunk fits the budget), it says why; the packer of new material, handed no
    candidates, would only say "no hits".
    """
    if not hits:
        return empty or "no chunk matches the query"
    if not selection.chunks and refs:
        return "all the best chunks were already provided (refresh=true sends them again)"
    if not selection.chunks and plain:
        return plain
    return selection.note

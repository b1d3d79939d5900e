"""Passages for ``get_chunk`` and ``get_document``: a span of a document, cut to fit.

A passage is cut at :data:`~ctxselect.agent.limits.MAX_SPAN_CHARS` characters, then
shortened until its result fits the cap; its note says where to continue. The chunks lying
wholly inside what was sent count as received.
"""

from __future__ import annotations

from ctxselect.agent import limits
from ctxselect.agent.memory import SessionState
from ctxselect.agent.results import Meter
from ctxselect.agent.spans import DocSpans
from ctxselect.tool_results import Passage


def read_passage(
    spans: DocSpans,
    meter: Meter,
    state: SessionState,
    doc_id: str,
    span: tuple[int, int],
    size: int,
    header: str,
    note: str,
) -> Passage:
    """A passage of ``span`` cut to MAX_SPAN_CHARS and the cap, recorded as sent."""
    index = spans.index
    start, end = span

    def passage(stop: int) -> Passage:
        text = index.span_text(doc_id, start, stop)
        first, last = spans.lines(doc_id, start, stop)
        cut = f"cut at {stop}: continue with start={stop}" if stop < end else ""
        return Passage(
            doc_id,
            start,
            stop,
            first,
            last,
            size,
            header,
            spans.covered(doc_id, start, stop),
            index.count_tokens(text),
            stop < end,
            stop if stop < size else None,
            text,
            state.calls + 1,
            0,
            0,
            meter.cap,
            "; ".join(p for p in (note, cut) if p),
        )

    def shorter(p: Passage) -> Passage | None:
        if p.end <= start:
            return None
        ratio = min(0.9, 0.9 * meter.cap / max(1, p.result_tokens))
        return passage(start + int((p.end - start) * ratio))

    result = meter.fit(passage(min(end, start + limits.MAX_SPAN_CHARS)), state.tokens, shorter)
    state.deliver(spans, result.call, result.result_tokens, [(doc_id, start, result.end)])
    return result

"""``grep`` in a session: blocks the session already has come back as references.

A block is known when text the session received covers it: chunks it was sent (by any
tool) and blocks earlier ``grep`` calls sent, whose text has not changed since; blank
lines between them do not count. A known block is sent as its reference line unless the
line would cost as many tokens as the block (a line or two): then the text goes again.
Blocks sent are remembered as spans (a block is usually smaller than a chunk), and the
chunks lying wholly inside them count as received, as for ``get_document``, so a later
``select`` sends those as references too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ctxselect import api
from ctxselect.agent.grep import (
    GrepBlock,
    GrepReference,
    GrepResult,
    GrepScan,
    fit_scan,
    scan_stop,
    stop_reason,
)
from ctxselect.agent.grep_text import item_tokens
from ctxselect.agent.results import Meter
from ctxselect.agent.spans import DocSpans
from ctxselect.errors import NotFoundError

if TYPE_CHECKING:  # memory imports this module
    from ctxselect.agent.memory import SessionState

Grepped = dict[tuple[str, int, int], tuple[int, int]]
"""(doc_id, start, end) of a block a session was sent -> (call, hash of its text)."""

MAX_GREPPED = 10_000
"""Blocks remembered per session; the oldest are forgotten first."""


class SeenText:
    """What one session has of the index's documents, for one ``grep`` call.

    Args:
        index: The index the session reads.
        had: Each chunk the session received, unchanged since, -> the call that sent it.
        grepped: The session's sent blocks (updated by :meth:`grep`).
    """

    def __init__(self, index: api.Index, had: Mapping[str, int], grepped: Grepped) -> None:
        self.index = index
        self.grepped = grepped
        table = index.table
        self._chunks: dict[str, list[tuple[int, int, int]]] = {}
        for chunk_id, call in had.items():
            row = table.row_of[chunk_id]
            span = (table.starts[row], table.ends[row], call)
            self._chunks.setdefault(table.doc_ids[row], []).append(span)
        self._spans: dict[str, list[tuple[int, int, int]]] = {}

    def fit(self, scan: GrepScan, meter: Meter, call: int, before: int) -> GrepResult:
        """Fit ``scan`` (:func:`~ctxselect.agent.grep.scan_index`, on this index) with
        references for known blocks under the cap, and remember the blocks sent.

        Raises:
            ConfigError: Not even the result without blocks fits the cap.
        """
        found = fit_scan(self.index, scan, known=self.reference)
        found = dataclasses.replace(found, call=call, max_result_tokens=meter.cap)
        result = fit_grep(meter, found, before)
        for block in result.blocks:
            self.grepped.pop((block.doc_id, block.start, block.end), None)
            self.grepped[(block.doc_id, block.start, block.end)] = (call, hash(block.text))
        for key in list(self.grepped)[: max(0, len(self.grepped) - MAX_GREPPED)]:
            del self.grepped[key]
        return result

    def reference(self, block: GrepBlock) -> GrepReference | None:
        """The line to send instead of ``block`` if the session has its text and the line
        costs fewer tokens than the block, else None."""
        call = _covering_call(block, self._known(block.doc_id))
        if call is None:
            return None
        lines = tuple(m.line for m in block.matches)
        text = (
            f"already provided: {block.doc_id} lines {block.line_start}-{block.line_end} "
            f"(matches on line{'s' if len(lines) > 1 else ''} {line_runs(lines)}) "
            f"in call {call}"
        )
        tokens = self.index.count_tokens(text + "\n")
        if tokens >= block.tokens:
            return None  # the block itself is cheaper: send it again
        return GrepReference(
            block.doc_id, block.start, block.end, block.line_start, block.line_end, lines,
            call, tokens, max(0, block.tokens - tokens), text,
        )  # fmt: skip

    def _known(self, doc_id: str) -> list[tuple[int, int, int]]:
        """(start, end, call) of the text of ``doc_id`` the session has, by start."""
        spans = self._spans.get(doc_id)
        if spans is None:
            spans = list(self._chunks.get(doc_id, ()))
            for (doc, start, end), (call, digest) in self.grepped.items():
                if doc == doc_id and self._unchanged(doc, start, end, digest):
                    spans.append((start, end, call))
            self._spans[doc_id] = spans = sorted(spans)
        return spans

    def _unchanged(self, doc_id: str, start: int, end: int, digest: int) -> bool:
        try:
            return hash(self.index.span_text(doc_id, start, end)) == digest
        except NotFoundError:  # the document left the index
            return False


def grep_in_session(
    spans: DocSpans, meter: Meter, state: SessionState, scan: GrepScan
) -> GrepResult:
    """Fit ``scan`` (of ``spans.index``) to what ``state`` has under the cap; record it."""
    had = {c: seen.call for c, seen in state.received(spans).items()}
    seen = SeenText(spans.index, had, state.grepped)
    result = seen.fit(scan, meter, state.calls + 1, state.tokens)
    sent = [(b.doc_id, b.start, b.end) for b in result.blocks]
    state.deliver(spans, result.call, result.result_tokens, sent)
    return result


def line_runs(lines: tuple[int, ...]) -> str:
    """Line numbers as runs, ``1-144`` or ``3, 7-9``: a reference stays short when every
    line of a block matches."""
    runs: list[list[int]] = []
    for line in lines:
        if runs and line == runs[-1][1] + 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _covering_call(block: GrepBlock, spans: list[tuple[int, int, int]]) -> int | None:
    """The latest call among ``spans`` that together cover the block's non-blank text."""
    pos, calls = block.start, []
    for start, end, call in spans:
        if end <= pos or start >= block.end:
            continue
        if start > pos and block.text[pos - block.start : start - block.start].strip():
            return None  # text between two known spans the session lacks
        calls.append(call)
        pos = max(pos, end)
        if pos >= block.end:
            break
    if not calls or block.text[pos - block.start :].strip():
        return None
    return max(calls)


def fit_grep(meter: Meter, found: GrepResult, before: int) -> GrepResult:
    """Measure ``found`` and cut its last blocks (then references) until it fits the cap.

    Each item is counted once on its own as it reads in the text block, a little below
    what it adds there (:func:`~ctxselect.agent.grep_text.item_tokens`: no file line, no
    separator, no summary or metadata), so at least the items past where the running sum
    of those costs passes the cap must go. :meth:`Meter.fit_cut` searches from there
    instead of re-measuring the result once per item.

    Raises:
        ConfigError: Not even the result without blocks and references fits.
    """
    items: list[GrepBlock | GrepReference] = [*found.references, *found.blocks]  # cut_grep order
    total, least = 0, 0
    for n, item in enumerate(items):
        total += item_tokens(meter.count, item)
        if total > meter.cap:
            least = len(items) - n
            break
    return meter.fit_cut(found, before, cut_grep, len(items), least)


def cut_grep(result: GrepResult, k: int) -> GrepResult:
    """``result`` without its last ``k`` items: blocks from the last, then references.

    ``matches_left_out`` and ``tokens_used`` follow; ``stop`` names the first item left
    out (``result cap: ...``) after any early end of the scan, and ``note`` says so.
    """
    if k <= 0:
        return result
    n_blocks, n_refs = len(result.blocks), len(result.references)
    cut_blocks, cut_refs = min(k, n_blocks), min(max(0, k - n_blocks), n_refs)
    blocks, gone = result.blocks[: n_blocks - cut_blocks], result.blocks[n_blocks - cut_blocks :]
    refs, gone_refs = (
        result.references[: n_refs - cut_refs],
        result.references[n_refs - cut_refs :],
    )
    first = gone[0] if gone else gone_refs[0]
    what = "block" if gone else "reference"
    cap = result.max_result_tokens
    reason = (
        f"result cap: the result must stay within {cap:,} tokens, so it ends before the "
        f"{what} for {first.doc_id} lines {first.line_start}-{first.line_end}: pass a "
        f"smaller budget or less context, narrow the pattern or the globs, or raise "
        f"--max-result-tokens"
    )
    return dataclasses.replace(
        result,
        blocks=blocks,
        references=refs,
        matches_left_out=result.matches_left_out
        + sum(len(b.matches) for b in gone)
        + sum(len(r.lines) for r in gone_refs),
        tokens_used=result.tokens_used
        - sum(b.tokens for b in gone)
        - sum(r.tokens for r in gone_refs),
        stop=stop_reason(scan_stop(result.stop), reason),
        note=f"cut to stay within {cap} tokens",
    )

"""Exact-match search beside ranked retrieval: ``grep`` over an index's stored documents.

:func:`grep_index` matches a regular expression (or, with ``fixed``, literal text)
against the normalised text of every document the index stores, the very texts
:meth:`ctxselect.api.Index.get_document` serves, read through the index's store. So
offsets and line numbers agree with ``get_document`` and with chunk offsets, nothing is
read from disk, and nothing outside the index can be reached (the confinement of
``get_document``: a document id is all a caller can name).

Matches come back in a stable order (doc_id, then line) as blocks: ``context`` lines
around each matching line, merged where their windows overlap or touch. Each block is
counted in the index's tokenizer and the result stops before the first block that would
pass ``budget``, saying how many matching lines it left out and why it stopped; a block
larger than the whole budget (a minified line) is skipped instead, and ``note`` names it.

Bounds, so no pattern or corpus makes a call run away: the pattern is compiled first (an
invalid one is refused naming its position); matching runs in the ``regex`` module, whose
``timeout`` interrupts a catastrophically backtracking pattern (``(a|aa)+$``) mid-match:
a call scans (reads and matches) for at most :data:`TIME_LIMIT` seconds, and the
document it is in then ends the scan (``stop`` names it). At most :data:`MAX_MATCHES`
matching lines are collected.

Globs (``include``, ``exclude``) are gitignore patterns matched against doc ids
(:mod:`ctxselect.api.globs`).
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxselect import api
from ctxselect.agent.grep_pattern import compile_pattern
from ctxselect.agent.limits import DEFAULT_BUDGET, check_budget, check_query
from ctxselect.api.globs import doc_filter, documents
from ctxselect.errors import ConfigError

DEFAULT_CONTEXT = 2
"""Lines of context on each side of a match when a caller names none."""
MAX_CONTEXT = 20
MAX_MATCHES = 10_000
"""Matching lines collected at most; scanning stops there (``stop`` says so)."""
TIME_LIMIT = 5.0
"""Seconds one call may scan (read and match documents) before it stops."""


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """A matching line: its 1-based number and where the first match on it lies.

    ``start``/``end`` are offsets into the document's normalised text; a match that
    spans lines belongs to the line it starts on.
    """

    line: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class GrepBlock:
    """Matching lines of one document with their context lines, as one span.

    ``text == document.text[start:end]``: whole lines ``line_start`` to ``line_end``
    (1-based, inclusive), each with its newline. ``chunk_ids`` are the chunks the span
    overlaps; ``tokens`` is ``text`` in the index's tokenizer.
    """

    doc_id: str
    start: int
    end: int
    line_start: int
    line_end: int
    matches: tuple[GrepMatch, ...]
    chunk_ids: tuple[str, ...]
    tokens: int
    text: str


@dataclass(frozen=True, slots=True)
class GrepReference:
    """A block whose text the session already received, sent as one line instead.

    ``call`` is the latest call that sent text covering it; ``tokens`` is what ``text``
    costs; ``tokens_saved`` is the block's tokens minus that.
    """

    doc_id: str
    start: int
    end: int
    line_start: int
    line_end: int
    lines: tuple[int, ...]
    call: int
    tokens: int
    tokens_saved: int
    text: str


@dataclass(frozen=True, slots=True)
class GrepResult:
    """What ``grep`` returns: blocks of matching lines in (doc_id, line) order, under a budget.

    ``documents`` were searched (after ``include``/``exclude``); ``matches`` matching
    lines were found there, ``matches_left_out`` of them are in no block or reference.
    ``tokens_used`` (block texts plus reference lines) never exceeds ``budget``. ``stop``
    says why the result ends: ``all matches``, ``budget full: ...``, ``result cap: ...``
    (a session result cut to the cap), ``match cap: ...`` or ``time limit: ...`` (the
    last two: more matches may exist; either comes first, joined to a budget or cap
    reason by ``; then ``, when both hold). ``note`` says why a result is empty or was
    cut. Outside a session (CLI, Python) ``references`` is empty and the accounting
    (``call``, ``session_tokens``, ``result_tokens``, ``max_result_tokens``) is 0.
    """

    pattern: str
    blocks: tuple[GrepBlock, ...]
    references: tuple[GrepReference, ...]
    documents: int
    matches: int
    matches_left_out: int
    tokens_used: int
    budget: int
    stop: str
    call: int = 0
    session_tokens: int = 0
    result_tokens: int = 0
    max_result_tokens: int = 0
    note: str = ""


Known = Callable[[GrepBlock], GrepReference | None]
"""A session's view: the reference to send instead of a block it has, or None."""


@dataclass(frozen=True, slots=True)
class _Window:
    """Matching lines of one document with their context: a block before it is counted."""

    doc_id: str
    start: int
    end: int
    line_start: int
    line_end: int
    matches: tuple[GrepMatch, ...]
    text: str


@dataclass(frozen=True, slots=True)
class GrepScan:
    """What :func:`scan_index` found (the slow half of grep, before any budget or session):
    windows in (doc_id, line) order, and why scanning ended early ('' when it did not)."""

    pattern: str
    documents: int
    windows: tuple[_Window, ...]
    stop: str
    note: str
    budget: int


def grep_index(
    index: api.Index,
    pattern: str,
    *,
    fixed: bool = False,
    ignore_case: bool = False,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    context: int = DEFAULT_CONTEXT,
    budget: int = DEFAULT_BUDGET,
    known: Known | None = None,
) -> GrepResult:
    """Find ``pattern`` in the index's stored documents, in blocks that fit ``budget`` tokens.

    Args:
        index: An opened index; only its stored documents are searched.
        pattern: A regular expression (Python syntax, MULTILINE: ``^``/``$`` match at
            lines), or literal text with ``fixed``.
        fixed: Match ``pattern`` as literal text.
        ignore_case: Match regardless of case.
        include: Gitignore globs; only documents whose id matches one are searched.
        exclude: Gitignore globs; documents whose id matches one are not searched.
        context: Lines before and after each matching line (0 to :data:`MAX_CONTEXT`).
        budget: Tokens of block text (and reference lines) at most.
        known: For sessions: the reference to send instead of a block the caller has.

    Raises:
        ConfigError: An empty or too long pattern, an invalid regex or glob (naming the
            position), a context or budget out of bounds.
    """
    found = scan_index(
        index, pattern, fixed=fixed, ignore_case=ignore_case, include=include,
        exclude=exclude, context=context, budget=budget,
    )  # fmt: skip
    return fit_scan(index, found, known)


def scan_index(
    index: api.Index,
    pattern: str,
    *,
    fixed: bool = False,
    ignore_case: bool = False,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    context: int = DEFAULT_CONTEXT,
    budget: int = DEFAULT_BUDGET,
) -> GrepScan:
    """Check the arguments and match the documents as :func:`grep_index` (ConfigError too)."""
    check_query(pattern, what="pattern")
    check_budget(budget, None)
    check_context(context)
    compiled = compile_pattern(pattern, fixed=fixed, ignore_case=ignore_case)
    keep = doc_filter(include, exclude)
    searched, note = keep(sorted(index.store.doc_hashes()))
    found, stop = _scan(index, compiled, searched, context)
    if not note and not found:
        note = f"no match for {pattern!r} in {documents(len(searched))}"
    return GrepScan(pattern, len(searched), tuple(found), stop, note, budget)


def fit_scan(index: api.Index, scan: GrepScan, known: Known | None = None) -> GrepResult:
    """The blocks (or, by ``known``, references) of ``scan`` that fit its budget."""
    total = sum(len(w.matches) for w in scan.windows)
    blocks, refs, stop, too_large = _fit(index, scan.windows, scan.budget, known)
    shown = sum(len(b.matches) for b in blocks) + sum(len(r.lines) for r in refs)
    used = sum(b.tokens for b in blocks) + sum(r.tokens for r in refs)
    return GrepResult(
        scan.pattern, blocks, refs, scan.documents, total, total - shown, used, scan.budget,
        stop_reason(scan.stop, stop), note=scan.note or too_large,
    )  # fmt: skip


STOP_SEPARATOR = "; then "
"""Between the two reasons a result can end for: scanning stopped early, then the fit."""


def stop_reason(scan: str, fit: str) -> str:
    """Why a result ends: the scan's early stop first (``match cap``, ``time limit``: more
    matches may exist, which a full budget must not hide), then why the blocks found
    stop (``budget full``, ``result cap``); ``all matches`` when neither holds."""
    return STOP_SEPARATOR.join(s for s in (scan, fit) if s) or "all matches"


def scan_stop(stop: str) -> str:
    """The part of a result's ``stop`` that says scanning ended early, or ''."""
    first = stop.split(STOP_SEPARATOR, 1)[0]
    return first if first.startswith(("match cap:", "time limit:")) else ""


def check_context(context: int) -> int:
    """Return ``context`` if it is between 0 and :data:`MAX_CONTEXT`, else raise ConfigError."""
    if not 0 <= context <= MAX_CONTEXT:
        raise ConfigError(
            f"context must be between 0 and {MAX_CONTEXT} lines, got {context}: pass fewer "
            f"lines and read more with get_document"
        )
    return context


def _scan(
    index: api.Index, compiled: Any, doc_ids: Sequence[str], context: int
) -> tuple[list[_Window], str]:
    """Match every document in order; return their windows and why scanning stopped early."""
    deadline = time.monotonic() + TIME_LIMIT
    found: list[_Window] = []
    count = 0
    for done, doc_id in enumerate(doc_ids):
        text = index.get_document(doc_id).text
        lines: dict[int, GrepMatch] = {}
        breaks: list[int] = []
        stop = ""
        try:
            for m in compiled.finditer(text, timeout=max(0.001, deadline - time.monotonic())):
                if m.start() == len(text) and (not text or text.endswith("\n")):
                    continue  # the empty "line" after a final newline
                if not breaks:
                    breaks = [b.start() for b in re.finditer("\n", text)]
                line = bisect.bisect_left(breaks, m.start()) + 1
                if line not in lines and count + len(lines) == MAX_MATCHES:
                    stop = f"match cap: more than {MAX_MATCHES:,} matching lines; scanning stopped"
                    break
                lines.setdefault(line, GrepMatch(line, m.start(), m.end()))
                if time.monotonic() > deadline:
                    raise TimeoutError
        except TimeoutError:
            stop = (
                f"time limit: scanning passed {TIME_LIMIT:g} s in {doc_id!r} after {done:,} "
                f"of {len(doc_ids):,} documents (nested repeats such as (a|aa)+ backtrack "
                f"exponentially): simplify the pattern, pass fixed, or narrow include"
            )
        count += len(lines)
        found.extend(_windows(doc_id, text, lines, breaks, context))
        if stop:
            return found, stop
        if time.monotonic() > deadline and done + 1 < len(doc_ids):
            return (
                found,
                f"time limit: scanning passed {TIME_LIMIT:g} s after {done + 1:,} "
                f"of {len(doc_ids):,} documents: narrow include",
            )
    return found, ""


def _windows(
    doc_id: str, text: str, lines: dict[int, GrepMatch], breaks: list[int], context: int
) -> list[_Window]:
    """Merge each match's ``context`` window with the next where they overlap or touch."""
    merged: list[tuple[int, int, list[GrepMatch]]] = []
    n_lines = len(breaks) + (0 if text.endswith("\n") else 1)
    for line, match in sorted(lines.items()):
        end_line = bisect.bisect_left(breaks, max(match.start, match.end - 1)) + 1
        first, last = max(1, line - context), min(n_lines, end_line + context)
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last), [*merged[-1][2], match])
        else:
            merged.append((first, last, [match]))
    out = []
    for first, last, matches in merged:
        start = breaks[first - 2] + 1 if first > 1 else 0
        end = breaks[last - 1] + 1 if last <= len(breaks) else len(text)
        out.append(_Window(doc_id, start, end, first, last, tuple(matches), text[start:end]))
    return out


def _fit(
    index: api.Index, found: Sequence[_Window], budget: int, known: Known | None
) -> tuple[tuple[GrepBlock, ...], tuple[GrepReference, ...], str, str]:
    """Walk the windows in order, each as a block or (``known``) a reference, to the budget.

    A block larger than the whole budget is skipped rather than ending the walk (one
    minified line must not hide every match after it); the last value says which.
    """
    chunks = _chunk_spans(index, {w.doc_id for w in found})
    blocks: list[GrepBlock] = []
    refs: list[GrepReference] = []
    skipped: list[tuple[_Window, int]] = []
    left = budget
    for w in found:
        ids = tuple(c for s, e, c in chunks.get(w.doc_id, ()) if s < w.end and w.start < e)
        block = GrepBlock(
            w.doc_id, w.start, w.end, w.line_start, w.line_end, w.matches, ids,
            index.count_tokens(w.text), w.text,
        )  # fmt: skip
        ref = known(block) if known is not None else None
        cost = block.tokens if ref is None else ref.tokens
        if cost > budget:
            skipped.append((w, cost))
            continue
        if cost > left:
            return tuple(blocks), tuple(refs), _budget_full(w, cost, left), _too_large(skipped)
        left -= cost
        if ref is None:
            blocks.append(block)
        else:
            refs.append(ref)
    stop = _budget_full(*skipped[0], budget, whole=True) if skipped else ""
    return tuple(blocks), tuple(refs), stop, _too_large(skipped)


def _budget_full(w: _Window, cost: int, left: int, *, whole: bool = False) -> str:
    where = f"{w.doc_id} lines {w.line_start}-{w.line_end}"
    if whole:
        return (
            f"budget full: a block ({where}) needs {cost} tokens, more than the whole budget "
            f"of {left}"
        )
    return (
        f"budget full: the next block ({where}) needs {cost} tokens and {left} are left: "
        f"raise budget, narrow the pattern or the globs, or pass less context"
    )


def _too_large(skipped: Sequence[tuple[_Window, int]]) -> str:
    """The note for blocks left out because each alone is larger than the budget."""
    if not skipped:
        return ""
    w, cost = skipped[0]
    more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
    return (
        f"left out {len(skipped)} block(s) larger than the whole budget ({w.doc_id} lines "
        f"{w.line_start}-{w.line_end}: {cost} tokens{more}): read around a match with "
        f"get_document (start {w.matches[0].start}), or raise budget"
    )


def _chunk_spans(index: api.Index, docs: set[str]) -> dict[str, list[tuple[int, int, str]]]:
    """(start, end, chunk_id) of every chunk of ``docs``, by document, in text order."""
    table = index.table
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for row, doc_id in enumerate(table.doc_ids):
        if doc_id in docs:
            spans.setdefault(doc_id, []).append(
                (table.starts[row], table.ends[row], table.chunk_ids[row])
            )
    for rows in spans.values():
        rows.sort()
    return spans

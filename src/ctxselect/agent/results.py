"""Keep results under the cap: measure them as the caller receives them, cut what is last.

A ``select`` result reaches an MCP client as two parts: a text block (what the
client model reads: the framed pieces exactly as ``ctxselect select`` prints them, the
reference lines, one summary line) and small structured metadata (:class:`ContextMeta`:
ids, lines, costs, why it stopped), never the text twice. :func:`context_wire` is both
parts as they travel, which is what ``result_tokens`` counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ctxselect.agent.grep import GrepResult
from ctxselect.agent.grep_text import grep_wire
from ctxselect.agent.limits import SHOWN_DROPPED, compact_json
from ctxselect.budget import frame
from ctxselect.config import DEFAULT_FORMAT
from ctxselect.errors import ConfigError
from ctxselect.tool_results import ContextPiece, ContextResult, Metered, SearchResult
from ctxselect.types import DroppedChunk

V = TypeVar("V")
M = TypeVar("M", bound=Metered)


class Meter:
    """Counts a result's serialised text in the index's tokenizer, against a cap.

    Args:
        count: Tokens of a text (the index's tokenizer).
        serialize: The text a result reaches the caller as.
        cap: No result may exceed this many tokens.
    """

    def __init__(
        self, count: Callable[[str], int], serialize: Callable[[object], str], cap: int
    ) -> None:
        self.count = count
        self.serialize = serialize
        self.cap = cap

    def tokens(self, value: object) -> int:
        """Tokens of ``value`` as the caller receives it."""
        return self.count(self.serialize(value))

    def measured(self, value: M, before: int) -> M:
        """Fill in ``result_tokens`` and ``session_tokens`` (``before`` + this result).

        The counts are part of the JSON they count, so iterate to a fixed point (2 or 3
        rounds; a count only moves when a number gains or loses a digit).
        """
        any_value: Any = value
        for _ in range(6):
            tokens = self.tokens(any_value)
            settled = any_value.result_tokens == tokens
            any_value = dataclasses.replace(
                any_value, result_tokens=tokens, session_tokens=before + tokens
            )
            if settled:
                break
        return any_value

    def fit(self, value: M, before: int, shrink: Callable[[M], M | None]) -> M:
        """Measure ``value``, shrinking it until it fits the cap.

        Raises:
            ConfigError: ``shrink`` cannot make it any smaller and it still does not fit.
        """
        value = self.measured(value, before)
        while value.result_tokens > self.cap:
            smaller = shrink(value)
            if smaller is None:
                raise ConfigError(
                    f"the result cannot be cut below the cap of {self.cap:,} tokens: "
                    f"raise --max-result-tokens or ask for less"
                )
            value = self.measured(smaller, before)
        return value

    def fit_cut(
        self, value: M, before: int, cut: Callable[[M, int], M], most: int, least: int = 0
    ) -> M:
        """Measure ``value``, cutting the fewest of its last ``most`` items that make it fit.

        ``cut(value, k)`` is ``value`` without its last ``k`` items. Instead of measuring
        the whole result again after each item dropped (quadratic: thousands of grep
        blocks took minutes), search for ``k`` from ``least``, an estimate the caller
        works out from per-item costs counted once (with ``least`` > 0 the uncut value
        is known not to fit and is not measured): steps that double, then bisection, so
        O(log most) measurements, each of a result not much larger than the cap.

        Raises:
            ConfigError: Even without all ``most`` items the result does not fit.
        """
        if least <= 0:
            whole = self.measured(value, before)
            if whole.result_tokens <= self.cap:
                return whole
        fails, step, probe = max(0, least - 1), 1, min(most, max(1, least))
        while True:  # double the step until a cut fits; ``fails`` is the largest that does not
            found = self.measured(cut(value, probe), before) if probe > 0 else value
            if probe > 0 and found.result_tokens <= self.cap:
                break
            if probe >= most:
                raise ConfigError(
                    f"the result cannot be cut below the cap of {self.cap:,} tokens: "
                    f"raise --max-result-tokens or ask for less"
                )
            fails, probe, step = probe, min(most, probe + step), step * 2
        while probe - fails > 1:  # the smallest k in (fails, probe] that fits
            mid = (fails + probe) // 2
            tried = self.measured(cut(value, mid), before)
            if tried.result_tokens <= self.cap:
                found, probe = tried, mid
            else:
                fails = mid
        return found

    def fit_plain(self, value: V, shrink: Callable[[V], V | None]) -> V:
        """Shrink a result without token fields until it fits; raise if it cannot."""
        while self.tokens(value) > self.cap:
            smaller = shrink(value)
            if smaller is None:
                raise ConfigError(
                    f"the result would be {self.tokens(value):,} tokens, above the cap of "
                    f"{self.cap:,}: ask for less (shorter query or input, smaller k)"
                )
            value = smaller
        return value


def shrink_context(result: ContextResult) -> ContextResult | None:
    """Move the last piece to ``dropped``; then trim the dropped list, then references."""
    if result.pieces:
        piece = result.pieces[-1]
        reason = f"result cap: the result must stay within {result.max_result_tokens} tokens"
        cut = tuple(DroppedChunk(c, piece.doc_id, piece.tokens, reason) for c in piece.chunk_ids)
        return dataclasses.replace(
            result,
            pieces=result.pieces[:-1],
            dropped=(cut + result.dropped)[:SHOWN_DROPPED],
            dropped_total=result.dropped_total + len(cut),
            tokens_used=result.tokens_used - piece.tokens,
        )
    if result.dropped:
        return dataclasses.replace(result, dropped=result.dropped[:-1])
    if result.references:
        ref = result.references[-1]
        return dataclasses.replace(
            result,
            references=result.references[:-1],
            tokens_used=result.tokens_used - ref.tokens,
            tokens_saved=result.tokens_saved - ref.tokens_saved,
        )
    return None


def shrink_search(result: SearchResult) -> SearchResult | None:
    """Drop the last hit that carries text."""
    if not result.hits:
        return None
    kept = len(result.references) + len(result.hits) - 1
    return dataclasses.replace(
        result,
        hits=result.hits[:-1],
        tokens_used=result.tokens_used - result.hits[-1].n_tokens,
        note=f"cut to {kept} result(s) to stay within {result.max_result_tokens} tokens",
    )


@dataclass(frozen=True, slots=True)
class PieceMeta:
    """A piece of new context: the chunks it covers, its 1-based lines, its framed cost."""

    chunk_ids: tuple[str, ...]
    lines: tuple[int, int]
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextMeta:
    """The structured part of a ``select`` result: what the text block holds.

    The same accounting as :class:`ContextResult` (``tokens_used`` <= ``budget``;
    ``result_tokens`` is :func:`context_wire` of the whole result in the index's
    tokenizer), without the texts, which travel once, in the text block. No field
    repeats what the caller passed (query, mode, budget) or what only the model reads
    (the note, in the summary line). ``references`` is how many chunks the session already
    has came back as reference lines in the text (each names the chunk id, its lines and
    the call that sent it; the ids are not repeated here, which kept a result of mostly
    references from costing more than 1.15 x its ``tokens_used`` + 100). ``stop``
    is the rule that ended the selection (``budget full``, ``no more matches``, ``next
    chunk below threshold``, ``score gap (uncalibrated)``: ``ContextResult.stop`` up to
    its colon, without the numbers).
    """

    pieces: tuple[PieceMeta, ...]
    references: int
    tokens_used: int
    tokens_saved: int
    dropped_total: int
    call: int
    result_tokens: int
    session_tokens: int
    stop: str = ""


def context_meta(result: ContextResult) -> ContextMeta:
    """Return the structured metadata of ``result`` (ids, lines, costs; no text)."""
    pieces = tuple(
        PieceMeta(p.chunk_ids, (p.line_start, p.line_end), p.tokens) for p in result.pieces
    )
    return ContextMeta(
        pieces, len(result.references), result.tokens_used, result.tokens_saved,
        result.dropped_total, result.call, result.result_tokens, result.session_tokens,
        stop_rule(result.stop),
    )  # fmt: skip


def stop_rule(stop: str) -> str:
    """The rule a stop reason names: ``next chunk below threshold: P 0.08 < 0.31`` gives
    ``next chunk below threshold``."""
    return stop.split(": ", 1)[0]


def context_text(result: ContextResult) -> str:
    """Return the text block of ``result``: what a client model reads.

    The pieces framed as ``ctxselect select`` prints them (``detail="ids"``: one line
    per piece instead), then one line per reference, then one summary line. The pieces
    and references cost exactly ``tokens_used`` (GPT-style tokenizers; see
    ``budget.render``); the summary line (tokens used of the budget, the rule that
    stopped the selection, the note) is the only addition.
    """
    body = "".join(_piece_text(p, with_text=result.detail != "ids") for p in result.pieces)
    refs = "".join(r.text + "\n" for r in result.references)
    facts = [f"{result.tokens_used} of {result.budget} tokens"]
    facts.extend([f"stop: {stop_rule(result.stop)}"] if result.stop else [])
    facts.extend([result.note] if result.note else [])
    return f"{body}{refs}[ctxselect: {'; '.join(facts)}]\n"


def _piece_text(piece: ContextPiece, *, with_text: bool) -> str:
    if with_text:
        return frame(piece.doc_id, piece.start, piece.end, piece.header, piece.text, DEFAULT_FORMAT)
    ids = " ".join(piece.chunk_ids)
    return (
        f"{ids}: {piece.doc_id} lines {piece.line_start}-{piece.line_end}, {piece.tokens} tokens\n"
    )


def structured(result: ContextResult) -> dict[str, Any]:
    """Return the structured content of ``result``: :class:`ContextMeta` as a dict."""
    return dataclasses.asdict(context_meta(result))


def context_wire(result: ContextResult) -> str:
    """Return what a client receives for ``result``: the text block, then the metadata.

    The metadata is :func:`structured` as compact JSON, the form it travels in
    (``structuredContent``); counting the two one after another is what
    ``result_tokens`` reports.
    """
    return context_text(result) + compact_json(structured(result))


def received_as(serialize: Callable[[object], str]) -> Callable[[object], str]:
    """Return ``serialize``, except that a :class:`ContextResult` is :func:`context_wire`
    and a :class:`~ctxselect.agent.grep.GrepResult` is
    :func:`~ctxselect.agent.grep_text.grep_wire`."""

    def text(value: object) -> str:
        if isinstance(value, ContextResult):
            return context_wire(value)
        if isinstance(value, GrepResult):
            return grep_wire(value)
        return serialize(value)

    return text

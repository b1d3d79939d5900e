"""Where a selection stops: at the budget, at a P(relevant) threshold, or at a score gap.

``stop`` takes ``none`` (fill the budget), a number P in [0, 1] (keep ranked chunks while
their calibrated P(relevant) >= P) or ``auto``. Calibrated, ``auto`` applies the cost model
tuning stored for the mode (:mod:`ctxselect.budget.calibration`): value with diminishing
returns, and the price of the chunk's own tokens, so a chunk of n tokens stays while
P >= t × (n / n̄) × (1 + E), t the stored threshold (the P a chunk of the index's mean size
n̄ needs) and E the relevant chunks expected above it (the sum of their P): a question with
one clear answer gets that answer, a broad one a few of its best chunks rather than every
chunk that might be relevant, and a long chunk has to be likelier relevant than a short one.
Uncalibrated, ``auto`` uses a rule on the score curve, the largest
gap (Arampatzis et al. 2009, "Where to stop reading a ranked list?", score-distribution
cut-offs): among the top :data:`GAP_DEPTH` scores, the list is cut after the rank with the
largest drop to the next score (a scale-free rule: it reads the same on bm25, cosine and
fused scores). The budget always stays a hard cap, and every selection says why it
stopped (``Selection.stop``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxselect.budget.packers import GREEDY_STOPPED
from ctxselect.errors import ConfigError
from ctxselect.types import DroppedChunk, Hit, Selection

STOP_NAMES = ("auto", "none")
"""Named stopping rules; a number in [0, 1] is a P(relevant) threshold."""
DEFAULT_STOP = "auto"
GAP_DEPTH = 20
"""Ranks the uncalibrated largest-gap rule looks at."""
BUDGET_FULL = "budget full"
NO_MORE = "no more matches"
RANKING_END = "end of the ranking"
"""Why a selection stopped when every chunk ranked was considered and ``k`` (or the depth
ranked for the budget) capped the ranking, so more chunks may match."""
UNCALIBRATED = "uncalibrated"


def check_stop(stop: object) -> str | float:
    """Return ``stop`` as ``"auto"``, ``"none"`` or a float in [0, 1].

    Raises:
        ConfigError: ``stop`` is another name, or a number outside [0, 1].
    """
    valid = f"use {', '.join(STOP_NAMES)} or a P(relevant) threshold from 0 to 1"
    value: float
    if isinstance(stop, str):
        name = stop.strip().lower()
        if name in STOP_NAMES:
            return name
        try:
            value = float(name)
        except ValueError:
            raise ConfigError(f"unknown stop rule {stop!r}: {valid}") from None
    elif isinstance(stop, int | float) and not isinstance(stop, bool):
        value = float(stop)
    else:
        raise ConfigError(f"unknown stop rule {stop!r}: {valid}")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ConfigError(f"stop threshold {stop!r} is outside [0, 1]: {valid}")
    return value


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a ranked list is cut before packing.

    Attributes:
        kept: Hits the packer may take, best first.
        rest: Hits cut off, best first.
        reason: Why the list was cut ("" when it was not).
        threshold: The P threshold applied (None for ``none`` and the gap rule).
        dropped_reasons: The reason each hit of ``rest`` is dropped with, in order.
    """

    kept: tuple[Hit, ...]
    rest: tuple[Hit, ...]
    reason: str
    threshold: float | None
    dropped_reasons: tuple[str, ...]


def cut_hits(
    hits: Sequence[Hit],
    stop: object,
    auto_threshold: float | None = None,
    mean_tokens: float | None = None,
) -> Cut:
    """Cut ranked ``hits`` where the rule ``stop`` says (see the module docstring).

    Args:
        hits: Ranked hits, best first; ``p_relevant`` set when the mode is calibrated.
        stop: ``auto``, ``none`` or a P threshold in [0, 1].
        auto_threshold: The threshold tuning chose for the mode (None: uncalibrated).
        mean_tokens: n̄, the chunk size ``auto_threshold`` was set for (None: every chunk
            is priced as if it had that size).

    Raises:
        ConfigError: Bad ``stop``, or a P threshold on hits without P(relevant).
    """
    rule = check_stop(stop)
    hits = tuple(hits)
    calibrated = bool(hits) and all(h.p_relevant is not None for h in hits)
    if rule == "none":
        return Cut(hits, (), "", None, ())
    if isinstance(rule, float):
        if hits and not calibrated:
            raise ConfigError(
                f"stop={rule:g} needs P(relevant), and this index is not calibrated for "
                f"the mode (or mmr/rerank reordered the hits): run `ctxselect tune --queries "
                f"... --qrels ...` first, or use --stop auto or --stop none"
            )
        return _threshold_cut(hits, rule)
    if calibrated and auto_threshold is not None:
        return _threshold_cut(hits, auto_threshold, diminishing=True, mean_tokens=mean_tokens)
    return _gap_cut(hits)


def auto_bar(threshold: float, size: float, above: float) -> float:
    """The P ``auto`` needs of a chunk: threshold × size × (1 + above), ``size`` the
    chunk's tokens over the mean the threshold was set for, ``above`` the P summed above."""
    return threshold * size * (1.0 + above)


def auto_kept(
    ps: Sequence[float], tokens: Sequence[int], threshold: float, mean_tokens: float | None
) -> int:
    """How many leading chunks of a ranking (P and tokens of each) ``auto`` keeps
    (``mean_tokens`` None: every chunk priced as if of the mean size)."""
    above = 0.0
    for i, (p, n) in enumerate(zip(ps, tokens, strict=True)):
        if p < auto_bar(threshold, n / mean_tokens if mean_tokens else 1.0, above):
            return i
        above += p
    return len(ps)


def _threshold_cut(
    hits: tuple[Hit, ...],
    threshold: float,
    *,
    diminishing: bool = False,
    mean_tokens: float | None = None,
) -> Cut:
    """Keep hits while P >= threshold; with ``diminishing`` (``auto``) the bar is
    threshold × (n / ``mean_tokens``) × (1 + E), E the P summed above (:func:`auto_kept`)."""
    ps = [float(h.p_relevant or 0.0) for h in hits]
    if diminishing:
        i = auto_kept(ps, [h.n_tokens for h in hits], threshold, mean_tokens)
    else:
        i = next((j for j, p in enumerate(ps) if p < threshold), len(ps))
    if i == len(hits):
        return Cut(hits, (), "", threshold, ())
    above = sum(ps[:i]) if diminishing else 0.0

    def bar(hit: Hit) -> tuple[float, str]:
        """The P ``hit`` would need after the kept hits, and how it is made."""
        if not diminishing:
            return threshold, ""
        size = hit.n_tokens / mean_tokens if mean_tokens else 1.0
        how = ""
        if above > 0 or size != 1.0:
            how = f" = {threshold:.2f}"
            if size != 1.0:
                how += f" x ({hit.n_tokens} / {mean_tokens:.0f} tokens)"
            if above > 0:
                how += f" x (1 + {above:.2f} relevant expected above)"
        return auto_bar(threshold, size, above), how

    def reason(j: int) -> str:
        needed, how = bar(hits[j])
        if ps[j] < needed:
            return "below threshold: P {} < {}".format(*_below(ps[j], needed)) + how
        return (  # the list ends at the first chunk below its bar; this one is past it
            f"after the cut at rank {hits[i].rank}: its P {ps[j]:.2f} would pass, but the "
            f"rule keeps chunks only while each passes"
        )

    reasons = tuple(reason(j) for j in range(i, len(hits)))  # the first is below its bar
    why = reasons[0].removeprefix("below threshold: ")
    return Cut(hits[:i], hits[i:], f"next chunk below threshold: {why}", threshold, reasons)


def _below(p: float, bar: float) -> tuple[str, str]:
    """Format ``p < bar`` with two decimals, more when needed for the printed numbers to
    still read ``p < bar`` (P 0.0995 against 0.1 is ``0.0995 < 0.1000``, not ``0.10 < 0.10``)."""
    digits = 2
    while digits < 17 and not float(f"{p:.{digits}f}") < float(f"{bar:.{digits}f}"):
        digits += 1
    return f"{p:.{digits}f}", f"{bar:.{digits}f}"


def _gap_cut(hits: tuple[Hit, ...]) -> Cut:
    top = hits[: min(GAP_DEPTH, len(hits))]
    if len(top) < 2:
        return Cut(hits, (), "", None, ())
    gaps = [top[i].score - top[i + 1].score for i in range(len(top) - 1)]
    at = max(range(len(gaps)), key=lambda i: (gaps[i], -i))  # the first of equal gaps
    if gaps[at] <= 0:  # tied (flat) top scores: no drop to cut at, the budget decides
        return Cut(hits, (), "", None, ())
    after, below = top[at], hits[at + 1]
    why = (
        f"score gap ({UNCALIBRATED}): {after.score:.4g} at rank {after.rank} -> "
        f"{below.score:.4g}, the largest drop among the top {len(top)}"
    )
    rest = hits[at + 1 :]
    dropped = (f"after the largest score gap ({UNCALIBRATED})",) * len(rest)
    return Cut(hits[: at + 1], rest, why, None, dropped)


def finish(selection: Selection, cut: Cut, cost: Callable[[Hit], int]) -> Selection:
    """Add the cut hits to ``dropped`` (``cost``: a hit's framed tokens alone) and say why
    the selection stopped."""
    full = any(
        d.reason.startswith("does not fit") or d.reason.startswith(GREEDY_STOPPED)
        for d in selection.dropped
    )
    stop = BUDGET_FULL if full else cut.reason or NO_MORE
    rest = tuple(
        DroppedChunk(h.chunk_id, h.doc_id, cost(h), why)
        for h, why in zip(cut.rest, cut.dropped_reasons, strict=True)
    )
    note = selection.note
    if not selection.chunks and cut.rest and not cut.kept:
        note = f"nothing selected: {cut.reason}"
    elif not selection.chunks and cut.rest:  # the packer saw only what the rule kept
        note = (
            f"{note} (of the {len(cut.kept)} the stop rule kept; it cut {len(cut.rest)} "
            f"more, {cut.reason}: --stop none packs from all of them)"
        )
    return dataclasses.replace(
        selection, dropped=selection.dropped + rest, stop=stop, threshold=cut.threshold, note=note
    )

"""The knee of a budget sweep: where one more 1,000 tokens stops paying for itself.

The rule (one place; docs/08-evaluation.md, docs/formats.md and every report quote it):

- **δ, the least gain worth paying for**: ``δ = gain_per_1k × (1 + (T − 1) × c)`` recall
  per 1,000 tokens, where ``1 + (T − 1) × c`` is what a selected token costs over a
  session of T turns at cache factor c (:mod:`.cost`) and ``gain_per_1k`` (default
  0.02: two recall points per 1,000 tokens sent once) is the gain that 1,000 tokens
  must buy to be worth sending. With T = 10 and c = 0.1: δ = 0.02 × 1.9 = 0.038.
- **Per configuration**: fit the sweep with a monotone (non-decreasing, isotonic) curve;
  the knee is the smallest swept budget B from which no larger swept budget B″ gains δ
  or more per 1,000 tokens on that fit: ``(fit(B″) − fit(B)) / (B″ − B) × 1000 < δ`` for
  every B″ > B. Equivalently it is the swept budget with the highest net value
  ``fit(B) − δ × B / 1000`` (ties: the larger budget), the vertex of the fit's least
  concave majorant where its slope falls below δ, so a flat step just below a steep
  rise cannot end the search early. What holds when budgets are added to a rising sweep
  (values that keep it non-decreasing, so the fit at the swept budgets is unchanged;
  property tests check it): the knee either stays or moves to one of the added budgets,
  never to another budget already swept, and it stays unless an added budget's net value
  reaches the knee's (one above it gains δ or more per 1,000 tokens over the knee; from
  one below it, the step up to the knee gains at most δ per 1,000 tokens). What does not
  hold: "budgets added above the next swept budget never move it": a later steep rise is
  worth its tokens and moves the knee up to it. When the knee is the largest budget
  swept it is *at the edge* (larger budgets may still pay: sweep them); when it is the
  smallest it is *at the lower edge* (smaller budgets may do as well: sweep them).
- **Overall**: among configurations with a knee below their largest budget swept (else
  all), those whose value at the knee is within ε (noise) of the best value at a knee;
  of these the smallest knee wins (ties: the higher value, then grid order).

The knee metric is ``recall`` (fraction of relevant documents selected) or ``hit`` (at
least one relevant document selected); its values lie in [0, 1].
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxselect.errors import ConfigError
from ctxselect.eval.cost import session_cost
from ctxselect.eval.isotonic import isotonic_fit

DEFAULT_EPSILON = 0.01
DEFAULT_GAIN_PER_1K = 0.02
KNEE_METRICS = ("recall", "hit")
DEFAULT_KNEE_METRIC = "recall"
_TOLERANCE = 1e-12  # keep exact ties exact despite float arithmetic

Point = tuple[int, float]
"""(budget in tokens, value of the knee metric)."""


@dataclass(frozen=True, slots=True)
class Knee:
    """The recommended budget of one budget curve.

    Attributes:
        budget: The knee (see the module docstring for the rule).
        recall: The knee metric's measured value at the knee (recall@Bt or hit@Bt).
        fitted: The monotone fit's value at the knee.
        next_budget: The next swept budget after the knee; None at the edge.
        gain_after: Fitted gain per 1,000 tokens from ``budget`` to ``next_budget``
            (below δ, as is the gain to every larger swept budget).
        delta: δ, the least gain per 1,000 tokens worth its cost.
        metric: The knee metric: ``recall`` or ``hit``.
        best_recall: The highest measured value of the curve.
        best_budget: The smallest budget reaching ``best_recall``.
        at_edge: The knee is the largest budget swept: larger budgets may still pay.
        at_lower_edge: The knee is the smallest budget swept: smaller budgets may do
            as well.
    """

    budget: int
    recall: float
    fitted: float
    next_budget: int | None
    gain_after: float | None
    delta: float
    metric: str
    best_recall: float
    best_budget: int
    at_edge: bool
    at_lower_edge: bool


@dataclass(frozen=True, slots=True)
class Marginal:
    """Value gained per 1,000 tokens between two neighbouring budgets of a sweep."""

    lower: int
    upper: int
    recall_gain: float
    per_1k_tokens: float


def check_epsilon(epsilon: float) -> float:
    """Return ``epsilon`` if it is a finite number in [0, 1], else raise ConfigError."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        raise ConfigError(f"epsilon must be a number between 0 and 1, got {epsilon!r}")
    if not math.isfinite(epsilon) or not 0.0 <= epsilon <= 1.0:
        raise ConfigError(
            f"epsilon must be between 0 and 1 (an absolute recall difference), got {epsilon}"
        )
    return float(epsilon)


def check_gain(gain_per_1k: float) -> float:
    """Return ``gain_per_1k`` if it is a finite number in (0, 1], else raise ConfigError."""
    if isinstance(gain_per_1k, bool) or not isinstance(gain_per_1k, int | float):
        raise ConfigError(f"gain per 1k tokens must be a number, got {gain_per_1k!r}")
    if not math.isfinite(gain_per_1k) or not 0.0 < gain_per_1k <= 1.0:
        raise ConfigError(
            "gain per 1k tokens must be above 0 and at most 1 (recall gained per 1,000 "
            f"tokens, e.g. {DEFAULT_GAIN_PER_1K}), got {gain_per_1k}"
        )
    return float(gain_per_1k)


def check_knee_metric(metric: str) -> str:
    """Return ``metric`` if it is a knee metric, else raise ConfigError."""
    if metric not in KNEE_METRICS:
        raise ConfigError(
            f"unknown knee metric {metric!r}: choose one of {', '.join(KNEE_METRICS)}"
        )
    return metric


def knee_delta(gain_per_1k: float, turns: int, cache_factor: float) -> float:
    """δ = ``gain_per_1k`` × (1 + (turns − 1) × cache_factor), per 1,000 tokens.

    Raises:
        ConfigError: ``gain_per_1k`` outside (0, 1], turns < 1 or cache factor outside [0, 1].
    """
    factor = session_cost(0, turns, cache_factor).factor  # validates turns and c
    return round(check_gain(gain_per_1k) * factor, 12)


def _sorted_points(points: Sequence[Point]) -> list[Point]:
    if not points:
        raise ConfigError("a budget curve needs at least one (budget, recall) point")
    ordered = sorted(points)
    budgets = [b for b, _ in ordered]
    if len(set(budgets)) != len(budgets):
        raise ConfigError(f"a budget curve lists a budget twice: {budgets}")
    for budget, recall in ordered:
        if budget < 0 or not 0.0 <= recall <= 1.0:
            raise ConfigError(
                f"budget curve point ({budget}, {recall}) is out of range: budgets are "
                "token counts >= 0 and recall lies in [0, 1]"
            )
    return ordered


def find_knee(points: Sequence[Point], delta: float, metric: str = DEFAULT_KNEE_METRIC) -> Knee:
    """Return the knee of one budget curve (see the module docstring for the rule).

    Args:
        points: (budget, value) per swept budget, in any order.
        delta: δ, the least gain per 1,000 tokens worth its cost (see :func:`knee_delta`).
        metric: What the values are (``recall`` or ``hit``), for the record.

    Raises:
        ConfigError: No points, a repeated budget, values out of range, or δ <= 0.
    """
    if not math.isfinite(delta) or delta <= 0:
        raise ConfigError(f"δ must be a positive gain per 1,000 tokens, got {delta}")
    ordered = _sorted_points(points)
    budgets = [b for b, _ in ordered]
    fit = isotonic_fit([r for _, r in ordered])
    best = max(r for _, r in ordered)
    best_budget = next(b for b, r in ordered if r >= best - _TOLERANCE)
    at = _knee_index(budgets, fit, delta)
    inside = at + 1 < len(ordered)
    return Knee(
        budget=budgets[at],
        recall=ordered[at][1],
        fitted=fit[at],
        next_budget=budgets[at + 1] if inside else None,
        gain_after=_gain(budgets, fit, at, at + 1) if inside else None,
        delta=delta,
        metric=check_knee_metric(metric),
        best_recall=best,
        best_budget=best_budget,
        at_edge=not inside,
        at_lower_edge=at == 0,
    )


def _gain(budgets: Sequence[int], fit: Sequence[float], i: int, j: int) -> float:
    """Fitted gain per 1,000 tokens from budget ``i`` to budget ``j``."""
    return (fit[j] - fit[i]) / (budgets[j] - budgets[i]) * 1000.0


def _knee_index(budgets: Sequence[int], fit: Sequence[float], delta: float) -> int:
    """The smallest index from which every larger budget gains less than δ per 1k."""
    for i in range(len(budgets) - 1):
        later = (_gain(budgets, fit, i, j) for j in range(i + 1, len(budgets)))
        if all(gain < delta - _TOLERANCE for gain in later):
            return i
    return len(budgets) - 1


def marginal_recall(points: Sequence[Point]) -> list[Marginal]:
    """Return the value gained per 1,000 tokens between each pair of neighbouring budgets.

    ``(recall(B2) - recall(B1)) / (B2 - B1) * 1000`` for budgets B1 < B2 next to each
    other in the sweep, on the measured values; negative means the larger budget lost.

    Raises:
        ConfigError: As :func:`find_knee`.
    """
    ordered = _sorted_points(points)
    return [
        Marginal(b1, b2, r2 - r1, (r2 - r1) / (b2 - b1) * 1000.0)
        for (b1, r1), (b2, r2) in itertools.pairwise(ordered)
    ]


def overall_knee(
    curves: Mapping[str, Sequence[Point]],
    delta: float,
    epsilon: float = DEFAULT_EPSILON,
    metric: str = DEFAULT_KNEE_METRIC,
) -> tuple[str, Knee]:
    """Pick the recommended configuration and budget across curves.

    Each curve's knee is found with :func:`find_knee`. Curves whose knee is inside their
    range are preferred; among them (or among all, when none is inside), those whose
    value at the knee is within ``epsilon`` of the best value at a knee tie, and the
    smallest knee wins; then the higher value at the knee; then ``curves`` order.

    Returns:
        (the winning curve's name, its knee).

    Raises:
        ConfigError: No curves, a curve is invalid, or a bad epsilon.
    """
    epsilon = check_epsilon(epsilon)
    if not curves:
        raise ConfigError("no budget curves to choose from: sweep at least one configuration")
    knees = {name: find_knee(points, delta, metric) for name, points in curves.items()}
    inside = [n for n, k in knees.items() if not k.at_edge] or list(knees)
    top = max(knees[n].recall for n in inside)
    near = [n for n in inside if knees[n].recall >= top - epsilon - _TOLERANCE]
    order = {name: i for i, name in enumerate(curves)}
    name = min(near, key=lambda n: (knees[n].budget, -knees[n].recall, order[n]))
    return name, knees[name]

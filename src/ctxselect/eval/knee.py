"""The knee of a budget sweep, and the marginal recall bought by each step of budget.

The rule (one place; docs/formats.md and every report quote it):

- **Per configuration**: the knee is the smallest budget whose recall@Bt is within
  ε of the best recall@Bt that configuration reaches anywhere in the sweep
  (``recall@knee >= best - ε``; ε = 0.01 absolute by default).
- **Overall**: among the configurations whose best recall@Bt is within ε of the best
  recall@Bt of any configuration, the one with the smallest knee (ties: the higher
  recall at the knee, then the first in grid order); its knee is the recommended budget.

A knee at the largest budget swept is flagged ``at_edge``: recall may still be rising,
so sweep larger budgets before trusting it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxselect.errors import ConfigError

DEFAULT_EPSILON = 0.01
_TOLERANCE = 1e-12  # recall values are means of 0/1: keep exact ties exact

Point = tuple[int, float]
"""(budget in tokens, recall@Bt)."""


@dataclass(frozen=True, slots=True)
class Knee:
    """The recommended budget of one budget curve.

    Attributes:
        budget: The knee: smallest budget with recall >= best_recall - epsilon.
        recall: recall@Bt at the knee.
        best_recall: The highest recall@Bt of the curve.
        best_budget: The smallest budget reaching ``best_recall``.
        epsilon: The tolerance used.
        at_edge: The knee is the largest budget swept (recall may rise beyond it).
    """

    budget: int
    recall: float
    best_recall: float
    best_budget: int
    epsilon: float
    at_edge: bool


@dataclass(frozen=True, slots=True)
class Marginal:
    """Recall gained per 1,000 tokens between two neighbouring budgets of a sweep."""

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


def find_knee(points: Sequence[Point], epsilon: float = DEFAULT_EPSILON) -> Knee:
    """Return the knee of one budget curve (see the module docstring for the rule).

    Raises:
        ConfigError: No points, a repeated budget, values out of range, or a bad epsilon.
    """
    epsilon = check_epsilon(epsilon)
    ordered = _sorted_points(points)
    best = max(recall for _, recall in ordered)
    best_budget = next(b for b, r in ordered if r >= best - _TOLERANCE)
    knee_budget, knee_recall = next((b, r) for b, r in ordered if r >= best - epsilon - _TOLERANCE)
    return Knee(
        budget=knee_budget,
        recall=knee_recall,
        best_recall=best,
        best_budget=best_budget,
        epsilon=epsilon,
        at_edge=knee_budget == ordered[-1][0],
    )


def marginal_recall(points: Sequence[Point]) -> list[Marginal]:
    """Return recall gained per 1,000 tokens between each pair of neighbouring budgets.

    ``(recall(B2) - recall(B1)) / (B2 - B1) * 1000`` for budgets B1 < B2 next to each
    other in the sweep; a negative value means the larger budget lost recall.

    Raises:
        ConfigError: As :func:`find_knee`.
    """
    ordered = _sorted_points(points)
    return [
        Marginal(b1, b2, r2 - r1, (r2 - r1) / (b2 - b1) * 1000.0)
        for (b1, r1), (b2, r2) in itertools.pairwise(ordered)
    ]


def overall_knee(
    curves: Mapping[str, Sequence[Point]], epsilon: float = DEFAULT_EPSILON
) -> tuple[str, Knee]:
    """Pick the recommended configuration and budget across curves.

    Among the curves whose best recall is within ``epsilon`` of the best recall of all
    curves, the one with the smallest knee wins; ties go to the higher recall at the
    knee, then to the first curve in ``curves`` order.

    Returns:
        (the winning curve's name, its knee).

    Raises:
        ConfigError: No curves, or a curve is invalid.
    """
    if not curves:
        raise ConfigError("no budget curves to choose from: sweep at least one configuration")
    knees = {name: find_knee(points, epsilon) for name, points in curves.items()}
    top = max(k.best_recall for k in knees.values())
    near = [name for name, k in knees.items() if k.best_recall >= top - epsilon - _TOLERANCE]
    order = {name: i for i, name in enumerate(curves)}
    name = min(near, key=lambda n: (knees[n].budget, -knees[n].recall, order[n]))
    return name, knees[name]

"""The cost of re-sent tokens: a selection stays in the context and is billed every turn.

A selection of B tokens enters the context at the first turn and is sent again on each
of the T - 1 turns still to run; a re-sent token is billed at a fraction c of a fresh one
(c = 0.1 with a prompt cache, 1.0 without). Over the session it is billed

    B × (1 + (T − 1) × c)

tokens, and the part beyond the knee K of the budget sweep, (B − K) × (1 + (T − 1) × c),
buys no recall (0 for budgets at or below the knee, which cost less but may lose
recall). Example: 8,000 tokens where 2,000 answer, 10 turns, c = 0.1: 6,000 × 1.9 =
11,400 surplus tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ctxselect.config import BUDGET
from ctxselect.errors import ConfigError

DEFAULT_TURNS = 10
CACHED_FACTOR = 0.1
UNCACHED_FACTOR = 1.0


@dataclass(frozen=True, slots=True)
class SessionCost:
    """Tokens billed over a session for one budget, and the surplus over the knee.

    Attributes:
        budget: Tokens selected (B).
        turns: Turns the selection stays in the context, the first included (T).
        cache_factor: Price of a re-sent token relative to a fresh one (c).
        factor: ``1 + (T − 1) × c``.
        billed: ``B × factor``.
        knee: The knee K, or None when not given.
        surplus: ``max(0, B − K) × factor``; None without a knee.
    """

    budget: int
    turns: int
    cache_factor: float
    factor: float
    billed: float
    knee: int | None = None
    surplus: float | None = None

    COLUMNS: ClassVar[tuple[str, ...]] = ("budget (tok)", "billed (tok)", "surplus over knee")

    def headers(self) -> tuple[str, ...]:
        """Column headers."""
        return self.COLUMNS

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed."""
        surplus = "-" if self.surplus is None else f"{self.surplus:,.0f}"
        return (f"{self.budget:,}", f"{self.billed:,.0f}", surplus)


def _whole(value: object, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return value


def check_cache_factor(cache_factor: float) -> float:
    """Return ``cache_factor`` if it lies in [0, 1], else raise ConfigError."""
    if isinstance(cache_factor, bool) or not isinstance(cache_factor, int | float):
        raise ConfigError(f"cache factor must be a number between 0 and 1, got {cache_factor!r}")
    if not math.isfinite(cache_factor) or not 0.0 <= cache_factor <= 1.0:
        raise ConfigError(
            f"cache factor must be between 0 and 1 (the price of a re-sent token relative "
            f"to a fresh one: {CACHED_FACTOR} cached, {UNCACHED_FACTOR} uncached), got "
            f"{cache_factor}"
        )
    return float(cache_factor)


def session_cost(
    budget: int,
    turns: int = DEFAULT_TURNS,
    cache_factor: float = CACHED_FACTOR,
    knee: int | None = None,
) -> SessionCost:
    """Return the tokens billed for ``budget`` over ``turns`` turns, and the surplus.

    Raises:
        ConfigError: ``budget`` or ``knee`` is not a whole number >= 0, ``turns`` is not
            >= 1, or ``cache_factor`` is outside [0, 1].
    """
    BUDGET.check(budget)
    budget = _whole(budget, "budget", 0)
    turns = _whole(turns, "turns", 1)
    cache_factor = check_cache_factor(cache_factor)
    factor = 1.0 + (turns - 1) * cache_factor
    # round away float noise such as 8000 * 1.9000000000000001
    billed = round(budget * factor, 6)
    surplus = None
    if knee is not None:
        knee = _whole(knee, "knee", 0)
        BUDGET.check(knee)
        surplus = round(max(0, budget - knee) * factor, 6)
    return SessionCost(budget, turns, cache_factor, round(factor, 12), billed, knee, surplus)


def cost_table(
    budgets: Sequence[int],
    knee: int | None,
    turns: int = DEFAULT_TURNS,
    cache_factor: float = CACHED_FACTOR,
) -> list[SessionCost]:
    """Return :func:`session_cost` for each budget, in increasing budget order."""
    return [session_cost(b, turns, cache_factor, knee) for b in sorted(set(budgets))]

"""How many ranked chunks a selection considers for a budget: one rule, used everywhere."""

from __future__ import annotations


def depth_for_budget(budget: int, mean_tokens: float) -> int:
    """Return enough chunks of ``mean_tokens`` to fill ``budget`` three times over, >= 50.

    Three times over leaves room for chunks the packer skips (too big, overlapping);
    the floor of 50 keeps small budgets from seeing too short a ranking.
    """
    return max(50, int(3 * budget / max(1.0, mean_tokens)) + 1)

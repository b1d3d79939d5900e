"""The stop threshold: the cost model's t unless the labels disagree by more than one SE."""

from __future__ import annotations

import pytest

from ctxselect.api.calibrate import GRID, choose_threshold, net_value

BILL = 1.9
VALUE = 2000.0


def _queries(p_relevant: float, p_rest: float, n: int = 6):
    """n identical rankings: one relevant chunk first, then nine irrelevant ones, 100 tokens."""
    return [([p_relevant] + [p_rest] * 9, [1] + [0] * 9, [100] * 10) for _ in range(n)]


def test_net_value_is_the_harmonic_worth_minus_the_tokens():
    assert net_value([1, 0, 1], [100, 50, 10], 3, VALUE, BILL) == pytest.approx(
        VALUE * (1 + 1 / 2) - BILL * 160
    )
    assert net_value([1, 1], [100, 100], 0, VALUE, BILL) == 0.0


def test_the_cost_models_t_stays_when_the_labels_agree():
    choice = choose_threshold(_queries(0.9, 0.05), 0.1, 100.0, value=VALUE, bill=BILL)
    # every t from 0.03 to 0.9 keeps exactly the relevant chunk: nothing to choose between
    assert choice.threshold == choice.cost_threshold == 0.1
    assert choice.rule.startswith("cost model")
    assert choice.net_value == pytest.approx(VALUE - BILL * 100)


def test_the_labels_move_t_when_p_is_too_low_for_the_formula():
    # the relevant chunk gets P 0.05 (miscalibrated), so the formula's t 0.1 keeps nothing
    choice = choose_threshold(_queries(0.05, 0.001), 0.1, 100.0, value=VALUE, bill=BILL)
    assert 0.001 < choice.threshold <= 0.05  # the closest t to 0.1 that keeps it
    assert choice.threshold == max(t for t in GRID if t <= 0.05)
    assert choice.rule.startswith("labels, one-SE rule toward the cost model's t 0.100")
    assert choice.net_value == pytest.approx(VALUE - BILL * 100)

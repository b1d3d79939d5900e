"""The uncalibrated largest-gap rule on tied scores: no drop means no cut."""

from __future__ import annotations

from budget_helpers import COUNTER, hit

from ctxselect.budget import make_packer
from ctxselect.budget.stop import BUDGET_FULL, GAP_DEPTH, NO_MORE, cut_hits, finish

TEXT = "a fairly short chunk of text about one thing"


def _hits(scores):
    return [hit(i + 1, f"d{i}", 0, TEXT, score=s) for i, s in enumerate(scores)]


def test_flat_scores_past_the_gap_depth_are_not_cut_at_a_zero_drop():
    cut = cut_hits(_hits([5.0] * (GAP_DEPTH + 5)), "auto")
    assert len(cut.kept) == GAP_DEPTH + 5
    assert cut.rest == ()
    assert cut.reason == ""


def test_a_flat_top_with_a_drop_below_the_gap_depth_is_not_cut_at_rank_1():
    cut = cut_hits(_hits([5.0] * GAP_DEPTH + [1.0] * 5), "auto")
    assert "at rank 1 ->" not in cut.reason
    assert len(cut.kept) > 1


def test_flat_scores_fill_the_budget_and_say_so():
    cut = cut_hits(_hits([5.0] * (GAP_DEPTH + 5)), "auto")
    selection = finish(make_packer("skip", COUNTER).pack(cut.kept, 10_000), cut, _alone)
    assert len(selection.chunks) == GAP_DEPTH + 5
    assert selection.stop == NO_MORE
    small = finish(make_packer("skip", COUNTER).pack(cut.kept, 100), cut, _alone)
    assert 0 < len(small.chunks) < GAP_DEPTH + 5
    assert small.stop == BUDGET_FULL


def _alone(h):
    return COUNTER.count(h.text)

"""Stopping rules: where a ranked list is cut before packing, and why a selection stopped."""

from __future__ import annotations

import dataclasses

import pytest
from budget_helpers import COUNTER, hit

from ctxselect.budget import make_packer
from ctxselect.budget.stop import BUDGET_FULL, NO_MORE, check_stop, cut_hits, finish
from ctxselect.errors import ConfigError

TEXT = "a fairly short chunk of text about one thing"


def _hits(scores, ps=None):
    out = [hit(i + 1, f"d{i}", 0, TEXT, score=s) for i, s in enumerate(scores)]
    if ps is not None:
        out = [dataclasses.replace(h, p_relevant=p) for h, p in zip(out, ps, strict=True)]
    return out


def _select(hits, budget, stop, auto=None):
    cut = cut_hits(hits, stop, auto)
    packed = make_packer("skip", COUNTER).pack(cut.kept, budget)
    return finish(packed, cut, lambda h: COUNTER.count(h.text))


@pytest.mark.parametrize("good", ["auto", "none", "NONE", "0", "1", "0.3", 0.25, 1])
def test_check_stop_accepts_names_and_thresholds(good):
    value = check_stop(good)
    assert value in ("auto", "none") or 0.0 <= value <= 1.0


@pytest.mark.parametrize("bad", ["sometimes", "1.5", "-0.1", 2, float("nan"), None, True])
def test_check_stop_refuses_with_the_valid_values(bad):
    with pytest.raises(ConfigError, match="auto, none or a P\\(relevant\\) threshold"):
        check_stop(bad)


@pytest.mark.parametrize(
    ("p", "threshold", "printed"),
    [
        (0.0995, 0.1, "P 0.0995 < 0.1000"),
        (0.0012, 0.003, "P 0.001 < 0.003"),
        (0.1, 0.3, "P 0.10 < 0.30"),
    ],
)
def test_the_stop_reason_prints_enough_digits_to_stay_true(p, threshold, printed):
    selection = _select(_hits([9, 8], [0.9, p]), 10_000, threshold)
    assert selection.stop == f"next chunk below threshold: {printed}"
    left, right = printed.removeprefix("P ").split(" < ")
    assert float(left) < float(right)


def test_threshold_keeps_chunks_while_p_is_high_enough():
    hits = _hits([9, 8, 7, 6], [0.7, 0.4, 0.1, 0.05])
    selection = _select(hits, 10_000, 0.3)
    assert [c.doc_id for c in selection.chunks] == ["d0", "d1"]
    assert selection.stop == "next chunk below threshold: P 0.10 < 0.30"
    assert selection.threshold == 0.3
    below = [d for d in selection.dropped if d.reason.startswith("below threshold")]
    assert [d.chunk_id for d in below] == ["d2#0", "d3#0"]
    assert all(d.tokens > 0 for d in below)
    assert [c.p_relevant for c in selection.chunks] == [0.7, 0.4]


def test_auto_uses_the_stored_threshold_when_calibrated():
    hits = _hits([9, 8, 7], [0.6, 0.2, 0.1])
    assert len(_select(hits, 10_000, "auto", auto=0.5).chunks) == 1
    # the second needs 0.1 x (1 + 0.6) = 0.16 <= 0.2, the third 0.1 x 1.8 = 0.18 > 0.1
    assert len(_select(hits, 10_000, "auto", auto=0.1).chunks) == 2


def test_auto_values_each_further_relevant_chunk_less():
    hits = _hits([9, 8, 7, 6], [0.6, 0.5, 0.45, 0.4])
    assert len(_select(hits, 10_000, 0.3).chunks) == 4  # a number is a plain P threshold
    selection = _select(hits, 10_000, "auto", auto=0.3)
    # the second needs 0.3 x (1 + 0.6) = 0.48 <= 0.5; the third 0.3 x (1 + 1.1) = 0.63 > 0.45
    assert [c.doc_id for c in selection.chunks] == ["d0", "d1"]
    assert selection.stop == (
        "next chunk below threshold: P 0.45 < 0.63 = 0.30 x (1 + 1.10 relevant expected above)"
    )
    assert selection.threshold == 0.3


def test_auto_prices_each_chunk_by_its_own_tokens():
    sized = zip(_hits([9, 8], [0.5, 0.2]), (100, 400), strict=True)
    hits = [dataclasses.replace(h, n_tokens=n) for h, n in sized]
    # t = 0.1 is the P a chunk of the mean size (200 tokens) needs
    cut = cut_hits(hits, "auto", 0.1, mean_tokens=200)
    # the first needs 0.1 x 100/200 = 0.05; the second 0.1 x 400/200 x (1 + 0.5) = 0.3 > 0.2
    assert [h.doc_id for h in cut.kept] == ["d0"]
    assert cut.reason == (
        "next chunk below threshold: P 0.20 < 0.30 = 0.10 x (400 / 200 tokens) "
        "x (1 + 0.50 relevant expected above)"
    )
    short = [dataclasses.replace(hits[1], n_tokens=100)]
    assert cut_hits([hits[0], *short], "auto", 0.1, mean_tokens=200).kept == (hits[0], *short)
    # a number is a plain threshold, whatever the sizes
    assert len(cut_hits(hits, 0.15, mean_tokens=200).kept) == 2


def test_the_budget_stays_a_hard_cap_and_wins_the_reason():
    hits = _hits([9, 8, 7, 6], [0.9, 0.9, 0.9, 0.1])
    one = COUNTER.count(TEXT) + 40  # room for about one framed chunk
    selection = _select(hits, one, 0.3)
    assert selection.tokens_used <= one
    assert selection.stop == BUDGET_FULL


def test_none_fills_the_budget_and_says_no_more_matches():
    hits = _hits([9, 8, 7], [0.9, 0.01, 0.01])
    selection = _select(hits, 10_000, "none")
    assert len(selection.chunks) == 3
    assert selection.stop == NO_MORE
    assert selection.threshold is None


def test_uncalibrated_auto_cuts_at_the_largest_score_gap():
    selection = _select(_hits([10.0, 9.5, 9.2, 4.0, 3.8, 3.5]), 10_000, "auto")
    assert [c.doc_id for c in selection.chunks] == ["d0", "d1", "d2"]
    assert selection.stop.startswith("score gap (uncalibrated)")
    assert "rank 3" in selection.stop


def test_a_threshold_without_p_is_an_error_saying_to_tune():
    with pytest.raises(ConfigError, match="ctxselect tune"):
        cut_hits(_hits([3, 2, 1]), 0.2)


def test_nothing_above_the_threshold_says_so():
    selection = _select(_hits([3, 2], [0.05, 0.01]), 10_000, 0.3)
    assert selection.chunks == ()
    assert "below threshold" in selection.note


def test_each_cut_chunk_is_dropped_with_its_own_p_and_bar():
    # every cut chunk carried the first cut chunk's reason, P and size included
    hits = _hits([9, 8, 7, 6], [0.7, 0.1, 0.02, 0.5])
    reasons = [d.reason for d in _select(hits, 10_000, 0.3).dropped]
    assert reasons == [
        "below threshold: P 0.10 < 0.30",
        "below threshold: P 0.02 < 0.30",
        "after the cut at rank 2: its P 0.50 would pass, but the rule keeps chunks only "
        "while each passes",
    ]
    sized = zip(_hits([9, 8, 7], [0.5, 0.2, 0.01]), (100, 400, 100), strict=True)
    auto = [dataclasses.replace(h, n_tokens=n) for h, n in sized]
    cut = cut_hits(auto, "auto", 0.1, mean_tokens=200)
    assert cut.dropped_reasons == (
        "below threshold: P 0.20 < 0.30 = 0.10 x (400 / 200 tokens) "
        "x (1 + 0.50 relevant expected above)",
        "below threshold: P 0.01 < 0.08 = 0.10 x (100 / 200 tokens) "
        "x (1 + 0.50 relevant expected above)",
    )
    for reason in (*reasons[:2], *cut.dropped_reasons):  # every printed inequality holds
        left, right = reason.removeprefix("below threshold: P ").split(" = ")[0].split(" < ")
        assert float(left) < float(right)


def test_an_empty_selection_says_the_rule_cut_smaller_chunks_it_never_packed():
    # it said only "budget 100 is smaller than the smallest framed chunk (411 tokens)"
    # while a 51-token chunk the stop rule had cut would have fitted
    long = hit(1, "big", 0, TEXT * 40, score=9.0)
    small = [hit(2, "s1", 0, TEXT, score=2.0), hit(3, "s2", 0, TEXT, score=1.9)]
    budget = COUNTER.count(TEXT) + 60
    selection = _select([long, *small], budget, "auto")
    assert selection.chunks == () and selection.stop == BUDGET_FULL
    assert selection.note.startswith(f"budget {budget} is smaller than the smallest framed")
    assert "(of the 1 the stop rule kept; it cut 2 more, score gap" in selection.note
    assert _select([long, *small], budget, "none").chunks  # the fix the note names works

"""Budget metrics, the knee rule, marginal recall and the cost of re-sent tokens."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import (
    BudgetMetricSpec,
    Labels,
    Span,
    budget_scores,
    cost_table,
    find_knee,
    knee_delta,
    marginal_recall,
    overall_knee,
    parse_budget_metric,
    ranking_metric_names,
    score_selection,
    session_cost,
    split_metrics,
)
from ctxselect.eval.isotonic import isotonic_fit
from ctxselect.eval.metrics import MetricSpec
from ctxselect.types import SelectedChunk, Selection


def piece(doc_id: str, start: int, end: int, tokens: int, n_chunks: int = 1) -> SelectedChunk:
    ids = tuple(f"{doc_id}#{i}" for i in range(n_chunks))
    return SelectedChunk(ids, doc_id, start, end, "x" * (end - start), "", 1.0, tokens, tokens)


def selection(*pieces: SelectedChunk, budget: int = 1000) -> Selection:
    return Selection(tuple(pieces), sum(p.tokens for p in pieces), budget)


# --- names ---


def test_budget_metric_names_parse_and_split_from_ranking_metrics():
    assert parse_budget_metric("recall@2000t") == BudgetMetricSpec("recall", 2000)
    assert str(parse_budget_metric("Relevant-Tokens@500t")) == "relevant-tokens@500t"
    ranking, budget = split_metrics("ndcg@10, recall@2000t,recall@100,tokens_used@500t")
    assert ranking == (MetricSpec("ndcg", 10), MetricSpec("recall", 100))
    assert budget == (BudgetMetricSpec("recall", 2000), BudgetMetricSpec("tokens_used", 500))
    assert ranking_metric_names("hit@1,ndcg@10") == ("hit@1", "ndcg@10")


@pytest.mark.parametrize("name", ["precision@200t", "recall@t", "ndcg@10t"])
def test_unknown_budget_metrics_list_the_valid_names(name):
    with pytest.raises(ConfigError, match="recall, hit, relevant-tokens, tokens_used, chunks"):
        split_metrics(name)


def test_ranking_only_refuses_budget_metrics():
    with pytest.raises(ConfigError, match="recall@500t is a budget metric"):
        ranking_metric_names("ndcg@10,recall@500t")


# --- scores ---


def test_document_labels_count_whole_pieces_of_relevant_documents():
    labels = Labels.from_qrels({"q": {"a": 1, "b": 0}})
    chosen = selection(piece("b", 0, 100, 300), piece("a", 0, 50, 100, n_chunks=2))
    assert score_selection(chosen, labels, "q") == {
        "recall": 1.0,
        "hit": 1.0,
        "relevant-tokens": 0.25,
        "tokens_used": 400.0,
        "chunks": 3.0,
    }
    missed = score_selection(selection(piece("b", 0, 100, 300)), labels, "q")
    assert missed["recall"] == 0.0 and missed["relevant-tokens"] == 0.0


def test_recall_is_the_fraction_of_relevant_documents_and_hit_is_any():
    labels = Labels.from_qrels({"q": {"a": 1, "b": 2, "c": 1, "d": 1, "z": 0}})
    one = selection(piece("a", 0, 10, 10), piece("a", 10, 20, 10), piece("z", 0, 5, 5))
    scores = score_selection(one, labels, "q")
    assert scores["hit"] == 1.0  # the answer is in the context...
    assert scores["recall"] == pytest.approx(1 / 4)  # ...but 1 of 4 relevant documents
    both = selection(piece("a", 0, 10, 10), piece("c", 0, 10, 10))
    assert score_selection(both, labels, "q")["recall"] == pytest.approx(2 / 4)


def test_span_recall_counts_the_relevant_spans_a_selection_overlaps():
    spans = [Span("q", "a", 0, 10, 1), Span("q", "a", 50, 60, 1), Span("q", "b", 0, 9, 1)]
    labels = Labels.from_spans([*spans, Span("q", "b", 20, 30, 0)])
    first = score_selection(selection(piece("a", 5, 20, 10)), labels, "q")
    assert (first["hit"], first["recall"]) == (1.0, pytest.approx(1 / 3))
    wide = score_selection(selection(piece("a", 0, 100, 10), piece("b", 20, 30, 5)), labels, "q")
    assert wide["recall"] == pytest.approx(2 / 3)  # the grade-0 span of b does not count


def test_span_labels_count_tokens_in_proportion_to_relevant_characters():
    labels = Labels.from_spans([Span("q", "a", 100, 150, 1)])
    half = selection(piece("a", 50, 150, 200))  # 50 of its 100 characters are relevant
    assert score_selection(half, labels, "q")["relevant-tokens"] == pytest.approx(0.5)
    assert score_selection(half, labels, "q")["recall"] == 1.0
    beside = selection(piece("a", 0, 100, 200))  # same document, no overlap
    assert score_selection(beside, labels, "q")["recall"] == 0.0
    assert score_selection(beside, labels, "q")["hit"] == 0.0


def test_empty_selection_and_missing_queries_score_zero():
    labels = Labels.from_qrels({"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 0}})
    scores = budget_scores({"q1": selection(piece("a", 0, 5, 10))}, labels, 500)
    assert sorted(scores) == ["q1", "q2"]  # q3 has nothing relevant: not evaluated
    assert scores["q1"] == {
        "recall@500t": 1.0,
        "hit@500t": 1.0,
        "relevant-tokens@500t": 1.0,
        "tokens_used@500t": 10.0,
        "chunks@500t": 1.0,
    }
    assert set(scores["q2"].values()) == {0.0}
    assert score_selection(Selection((), 0, 500), labels, "q1")["relevant-tokens"] == 0.0
    with pytest.raises(InputError, match="no labeled query has a relevant document"):
        budget_scores({}, Labels.from_qrels({"q": {"a": 0}}), 500)


# --- the knee ---

DELTA = 0.05  # recall per 1,000 tokens


def test_isotonic_fit_pools_adjacent_violators():
    assert isotonic_fit([0.1, 0.3, 0.2, 0.5]) == pytest.approx([0.1, 0.25, 0.25, 0.5])
    assert isotonic_fit([0.4, 0.3, 0.2]) == pytest.approx([0.3, 0.3, 0.3])
    assert isotonic_fit([0.1, 0.2]) == [0.1, 0.2]
    assert isotonic_fit([0.5, 0.1], weights=[3, 1]) == pytest.approx([0.4, 0.4])


def test_delta_follows_the_cost_model():
    assert knee_delta(0.02, 10, 0.1) == pytest.approx(0.038)  # 0.02 x (1 + 9 x 0.1)
    assert knee_delta(0.02, 10, 1.0) == pytest.approx(0.2)  # uncached: x T
    assert knee_delta(0.02, 1, 0.1) == pytest.approx(0.02)  # one turn: no re-sends
    for bad in (0.0, -0.1, 2.0):
        with pytest.raises(ConfigError, match="gain per 1k"):
            knee_delta(bad, 10, 0.1)


def test_knee_is_the_first_budget_from_which_no_larger_one_gains_delta():
    # gains per 1k: 0.8, 0.38, 0.005 (< 0.05), 0.0
    points = [(250, 0.50), (500, 0.70), (1000, 0.89), (2000, 0.895), (4000, 0.895)]
    knee = find_knee(points, DELTA)
    assert (knee.budget, knee.recall, knee.next_budget) == (1000, 0.89, 2000)
    assert knee.gain_after == pytest.approx(0.005) and not knee.at_edge
    assert (knee.best_recall, knee.best_budget, knee.delta) == (0.895, 2000, DELTA)
    assert find_knee(points, 0.5).budget == 500  # 0.38 < 0.5
    assert find_knee(list(reversed(points)), DELTA).budget == 1000  # order is irrelevant


def test_the_knee_does_not_move_with_the_largest_budget_swept():
    """The issue's case: up to 4,000 and up to 16,000 must give the same knee."""
    up_to_16k = [(500, 0.40), (1000, 0.55), (2000, 0.65), (4000, 0.70), (8000, 0.72)]
    up_to_16k.append((16000, 0.74))
    knees = {find_knee(up_to_16k[:n], 0.038).budget for n in (5, 6)}
    assert knees == {2000}  # 2,000 -> 4,000 gains 0.025 per 1k < 0.038


def test_a_knee_without_a_flat_step_is_at_the_edge():
    knee = find_knee([(500, 0.5), (1000, 0.6), (2000, 0.7)], DELTA)
    assert knee.budget == 2000 and knee.at_edge and knee.next_budget is None
    assert find_knee([(800, 0.4)], DELTA).at_edge


def test_a_dip_is_smoothed_by_the_monotone_fit():
    # measured 0.70 at 2,000 then 0.68 at 4,000: the fit pools them to 0.69, so the step
    # 2,000 -> 4,000 is flat (a measured loss never reads as a negative gain)
    points = [(500, 0.4), (1000, 0.6), (2000, 0.70), (4000, 0.68), (8000, 0.9)]
    knee = find_knee(points, DELTA)
    assert (knee.budget, knee.fitted) == (2000, pytest.approx(0.69))
    assert knee.gain_after == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("points", "delta", "message"),
    [
        ([], DELTA, "at least one"),
        ([(100, 0.5), (100, 0.6)], DELTA, "twice"),
        ([(100, 1.5)], DELTA, "out of range"),
        ([(-1, 0.5)], DELTA, "out of range"),
        ([(100, 0.5)], 0.0, "δ must be"),
        ([(100, 0.5)], float("nan"), "δ must be"),
    ],
)
def test_knee_input_errors(points, delta, message):
    with pytest.raises(ConfigError, match=message):
        find_knee(points, delta)


def test_marginal_recall_per_thousand_tokens():
    marginal = marginal_recall([(2000, 0.8), (500, 0.5), (1000, 0.7)])
    assert [(m.lower, m.upper) for m in marginal] == [(500, 1000), (1000, 2000)]
    assert marginal[0].per_1k_tokens == pytest.approx(0.4)  # 0.2 over 500 tokens
    assert marginal[1].per_1k_tokens == pytest.approx(0.1)
    assert marginal_recall([(500, 0.5)]) == []
    assert marginal_recall([(500, 0.6), (1000, 0.5)])[0].per_1k_tokens < 0


def test_overall_knee_prefers_the_best_configuration_at_its_own_knee():
    curves = {
        # still rising at the top: at the edge, not preferred although its best is highest
        "rising": [(500, 0.30), (1000, 0.60), (2000, 0.95)],
        # bm25-like: flat early, knee 500 at 0.70
        "cheap": [(500, 0.70), (1000, 0.71), (2000, 0.72)],
        # hybrid-like: knee 1000 at 0.80, clearly better than cheap
        "better": [(500, 0.60), (1000, 0.80), (2000, 0.81)],
        # as good as better within noise and no cheaper: better wins on grid order
        "same": [(500, 0.60), (1000, 0.795), (2000, 0.80)],
    }
    name, knee = overall_knee(curves, DELTA, 0.01)
    assert (name, knee.budget, knee.recall) == ("better", 1000, 0.80)
    name, _ = overall_knee({**curves, "noisy": [(500, 0.792), (1000, 0.793)]}, DELTA, 0.01)
    assert name == "noisy"  # within ε of the best at a knee, at fewer tokens
    assert overall_knee({"r": curves["rising"]}, DELTA)[1].at_edge  # none inside: all count
    with pytest.raises(ConfigError, match="no budget curves"):
        overall_knee({}, DELTA)


def _net(budget: int, value: float, delta: float = DELTA) -> float:
    """A budget's net value: its fitted value minus δ per 1,000 tokens."""
    return value - delta * budget / 1000


def test_a_flat_step_just_below_a_steep_rise_does_not_end_the_search():
    """The tester's SciFact sweep: adding 1,500 tokens moved the knee from 2,000 to 1,000.

    1,000 -> 1,500 gains 0.031 per 1k (< δ 0.038) but 1,000 -> 2,000 gains 0.046: the
    knee is past the rise, and adding 1,500 must not move it back to 1,000.
    """
    swept = [(250, 0.1908), (500, 0.5425), (1000, 0.7139), (2000, 0.7598), (4000, 0.8277)]
    swept.append((8000, 0.8621))
    knee = find_knee(swept, 0.038)
    with_1500 = find_knee([*swept, (1500, 0.7296)], 0.038)
    assert (knee.budget, with_1500.budget) == (2000, 2000)
    assert (with_1500.next_budget, with_1500.gain_after) == (4000, pytest.approx(0.03395))
    # 1,750 as good as 2,000 (the fit pools them): the knee moves to it, at fewer tokens
    assert find_knee([*swept, (1750, 0.7619)], 0.038).budget == 1750  # k3: measured 0.7619


def test_a_knee_at_the_smallest_budget_swept_is_at_the_lower_edge():
    lower = find_knee([(4000, 0.8277), (8000, 0.8621), (16000, 0.8886)], 0.038)
    assert (lower.budget, lower.at_lower_edge, lower.at_edge) == (4000, True, False)
    wider = find_knee([(1000, 0.7139), (2000, 0.7598), (4000, 0.8277), (8000, 0.8621)], 0.038)
    assert (wider.budget, wider.at_lower_edge) == (2000, False)
    single = find_knee([(800, 0.4)], DELTA)
    assert single.at_edge and single.at_lower_edge  # one budget: both edges


@st.composite
def rising_curve_and_additions(draw: st.DrawFn) -> tuple[list, list]:
    """A non-decreasing sweep (its own monotone fit) and budgets to add that keep it so."""
    n = draw(st.integers(2, 8))
    budgets = [b * 100 for b in sorted(draw(st.sets(st.integers(1, 400), min_size=n, max_size=n)))]
    values = sorted(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    points = list(zip(budgets, values, strict=True))
    extra = draw(st.sets(st.integers(0, 10**6), max_size=5))
    shares = draw(st.lists(st.floats(0, 1), min_size=len(extra), max_size=len(extra)))
    added = []
    for budget, share in zip(sorted(extra - set(budgets)), shares, strict=False):
        low = max((v for b, v in points if b < budget), default=0.0)
        high = min((v for b, v in points if b > budget), default=1.0)
        added.append((budget, low + (high - low) * share))  # between its neighbours
    return points, sorted(added)


@settings(max_examples=300, deadline=None)
@given(rising_curve_and_additions())
def test_added_budgets_move_the_knee_only_to_themselves_and_only_when_worth_it(drawn):
    """What the knee guarantees when budgets are added to a sweep.

    On a non-decreasing curve (the monotone fit is the curve itself) with added budgets
    whose values keep it non-decreasing: the new knee is the old knee or one of the added
    budgets, never another budget already swept; it stays where it was when no added
    budget's net value (value − δ per 1,000 tokens) reaches the old knee's; and it moves
    only to an added budget whose net value does.
    """
    points, added = drawn
    old = find_knee(points, DELTA)
    new = find_knee(points + added, DELTA)
    moved_to = dict(added)
    assert new.budget == old.budget or new.budget in moved_to
    bar = _net(old.budget, old.fitted)
    if all(_net(b, v) < bar - 1e-9 for b, v in added):
        assert new.budget == old.budget
    if new.budget != old.budget:
        assert _net(new.budget, moved_to[new.budget]) >= bar - 1e-9


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 400).map(lambda b: b * 100), st.floats(0, 1)),
        min_size=1,
        max_size=9,
        unique_by=lambda p: p[0],
    )
)
def test_from_the_knee_no_larger_budget_pays_and_every_smaller_one_gains_delta_to_it(points):
    """On any curve (dips included), read on its monotone fit."""
    knee = find_knee(points, DELTA)
    ordered = sorted(points)
    fit = dict(zip([b for b, _ in ordered], isotonic_fit([v for _, v in ordered]), strict=True))
    for budget, value in fit.items():
        if budget == knee.budget:
            continue
        gain = (value - fit[knee.budget]) / (budget - knee.budget) * 1000
        if budget > knee.budget:
            assert gain < DELTA  # a larger budget does not pay for its tokens
        else:
            assert gain >= DELTA - 1e-9  # the tokens from a smaller budget up to it pay
    assert knee.at_edge == (knee.budget == ordered[-1][0])
    assert knee.at_lower_edge == (knee.budget == ordered[0][0])


def test_budgets_on_the_fit_inside_the_sweep_never_move_the_knee():
    """Budgets read off the fit's straight lines (below the knee or past its next budget)."""
    points = [(250, 0.19), (500, 0.54), (1000, 0.71), (2000, 0.76), (4000, 0.83), (8000, 0.86)]
    knee = find_knee(points, 0.038)
    on_line = [(750, 0.625), (1500, 0.735), (3000, 0.795), (6000, 0.845)]
    assert find_knee(points + on_line, 0.038).budget == knee.budget == 2000


# --- cost ---


def test_session_cost_follows_the_formula():
    cost = session_cost(8000, turns=10, cache_factor=0.1, knee=2000)
    assert cost.factor == pytest.approx(1.9)
    assert cost.billed == 15200 and cost.surplus == 11400  # 6,000 surplus tokens x 1.9
    assert session_cost(4000, 10, 1.0).billed == 40000  # uncached: B x T
    assert session_cost(4000, 10, 0.1).billed == 7600  # the chapter's example
    assert session_cost(4000, 1, 0.1).billed == 4000  # one turn: no re-sends
    assert session_cost(1000, 10, 0.1, knee=2000).surplus == 0  # at or below the knee
    assert session_cost(1000).knee is None and session_cost(1000).surplus is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1, 10, 0.1), "budget"),
        ((100, 0, 0.1), "turns"),
        ((100, 10, 1.5), "cache factor"),
        ((100, 10, -0.1), "cache factor"),
        ((100, 10, 0.1, -5), "knee"),
        ((100.5, 10, 0.1), "budget"),
    ],
)
def test_session_cost_rejects_bad_values(args, message):
    with pytest.raises(ConfigError, match=message):
        session_cost(*args)


def test_cost_table_is_sorted_and_shows_cells():
    rows = cost_table([2000, 500, 500, 8000], knee=2000, turns=10, cache_factor=0.1)
    assert [r.budget for r in rows] == [500, 2000, 8000]
    assert rows[-1].cells() == ("8,000", "15,200", "11,400")
    assert rows[0].headers() == ("budget (tok)", "billed (tok)", "surplus over knee")

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


def test_knee_is_the_first_budget_whose_next_step_gains_less_than_delta():
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


@st.composite
def curve_and_additions(draw: st.DrawFn) -> tuple[list[tuple[int, float]], list, list]:
    """A sweep with a knee inside it, and budgets to add below the knee / above its next."""
    n = draw(st.integers(3, 8))
    budgets = sorted(draw(st.sets(st.integers(1, 400), min_size=n, max_size=n)))
    budgets = [b * 100 for b in budgets]
    values = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    points = list(zip(budgets, values, strict=True))
    below = draw(st.lists(st.integers(0, 10**6), max_size=4))
    above = draw(st.lists(st.tuples(st.integers(1, 10**6), st.floats(0, 1)), max_size=4))
    return points, below, above


def _interpolate(points: list[tuple[int, float]], budget: int) -> float:
    """The monotone fit of ``points`` read off at ``budget`` by straight lines."""
    fit = isotonic_fit([v for _, v in points])
    for (b1, _), (b2, _), f1, f2 in zip(points, points[1:], fit, fit[1:], strict=False):
        if b1 <= budget <= b2:
            return f1 + (f2 - f1) * (budget - b1) / (b2 - b1)
    raise AssertionError("budget outside the sweep")


@settings(max_examples=200, deadline=None)
@given(curve_and_additions())
def test_budgets_added_below_the_knee_or_above_the_next_point_never_move_it(drawn):
    points, below, above = drawn
    knee = find_knee(points, DELTA)
    if knee.at_edge:
        return  # no knee inside: nothing that must stand still
    first, last = points[0][0], points[-1][0]
    top = isotonic_fit([v for _, v in points])[-1]
    added: dict[int, float] = {}
    for raw in below:  # on the rising stretch: between swept budgets below the knee
        budget = first + raw % max(1, knee.budget - first)
        if first < budget < knee.budget and budget not in dict(points):
            added[budget] = _interpolate(points, budget)
    for offset, share in above:  # beyond the next point: any value the fit allows
        budget = knee.next_budget + offset
        if budget in dict(points):
            continue
        if budget < last:
            added[budget] = _interpolate(points, budget)
        else:  # beyond the sweep: anything from the top of the fit up
            added[budget] = top + (1 - top) * share
    higher = sorted(b for b in added if b > last)
    for b, v in zip(higher, sorted(added[b] for b in higher), strict=True):
        added[b] = v  # beyond the sweep, values rise with the budget
    moved = find_knee(points + sorted(added.items()), DELTA)
    assert (moved.budget, moved.next_budget) == (knee.budget, knee.next_budget)


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

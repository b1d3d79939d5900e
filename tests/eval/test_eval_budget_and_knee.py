"""Budget metrics, the knee rule, marginal recall and the cost of re-sent tokens."""

from __future__ import annotations

import pytest

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import (
    BudgetMetricSpec,
    Labels,
    Span,
    budget_scores,
    cost_table,
    find_knee,
    marginal_recall,
    overall_knee,
    parse_budget_metric,
    ranking_metric_names,
    score_selection,
    session_cost,
    split_metrics,
)
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
    with pytest.raises(ConfigError, match="recall, relevant-tokens, tokens_used, chunks"):
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
        "relevant-tokens": 0.25,
        "tokens_used": 400.0,
        "chunks": 3.0,
    }
    missed = score_selection(selection(piece("b", 0, 100, 300)), labels, "q")
    assert missed["recall"] == 0.0 and missed["relevant-tokens"] == 0.0


def test_span_labels_count_tokens_in_proportion_to_relevant_characters():
    labels = Labels.from_spans([Span("q", "a", 100, 150, 1)])
    half = selection(piece("a", 50, 150, 200))  # 50 of its 100 characters are relevant
    assert score_selection(half, labels, "q")["relevant-tokens"] == pytest.approx(0.5)
    assert score_selection(half, labels, "q")["recall"] == 1.0
    beside = selection(piece("a", 0, 100, 200))  # same document, no overlap
    assert score_selection(beside, labels, "q")["recall"] == 0.0


def test_empty_selection_and_missing_queries_score_zero():
    labels = Labels.from_qrels({"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 0}})
    scores = budget_scores({"q1": selection(piece("a", 0, 5, 10))}, labels, 500)
    assert sorted(scores) == ["q1", "q2"]  # q3 has nothing relevant: not evaluated
    assert scores["q1"] == {
        "recall@500t": 1.0,
        "relevant-tokens@500t": 1.0,
        "tokens_used@500t": 10.0,
        "chunks@500t": 1.0,
    }
    assert set(scores["q2"].values()) == {0.0}
    assert score_selection(Selection((), 0, 500), labels, "q1")["relevant-tokens"] == 0.0
    with pytest.raises(InputError, match="no labeled query has a relevant document"):
        budget_scores({}, Labels.from_qrels({"q": {"a": 0}}), 500)


# --- the knee ---


def test_knee_is_the_smallest_budget_within_epsilon_of_the_best():
    points = [(250, 0.50), (500, 0.70), (1000, 0.795), (2000, 0.80), (4000, 0.80)]
    knee = find_knee(points, 0.01)
    assert (knee.budget, knee.recall, knee.best_recall, knee.best_budget) == (
        1000,
        0.795,
        0.80,
        2000,
    )
    assert not knee.at_edge
    assert find_knee(points, 0.0).budget == 2000
    assert find_knee(points, 0.2).budget == 500
    assert find_knee(list(reversed(points))).budget == 1000  # order of points is irrelevant


def test_a_knee_at_the_largest_budget_is_flagged():
    knee = find_knee([(500, 0.5), (1000, 0.6), (2000, 0.7)])
    assert knee.budget == 2000 and knee.at_edge
    assert find_knee([(800, 0.4)]).at_edge


def test_flat_curve_and_exact_epsilon_edge():
    assert find_knee([(100, 0.3), (200, 0.3)]).budget == 100
    # 0.79 is exactly best - epsilon: within, despite float arithmetic
    assert find_knee([(100, 0.79), (200, 0.80)], 0.01).budget == 100


@pytest.mark.parametrize(
    ("points", "epsilon", "message"),
    [
        ([], 0.01, "at least one"),
        ([(100, 0.5), (100, 0.6)], 0.01, "twice"),
        ([(100, 1.5)], 0.01, "out of range"),
        ([(-1, 0.5)], 0.01, "out of range"),
        ([(100, 0.5)], -0.1, "epsilon"),
        ([(100, 0.5)], 2.0, "epsilon"),
    ],
)
def test_knee_input_errors(points, epsilon, message):
    with pytest.raises(ConfigError, match=message):
        find_knee(points, epsilon)


def test_marginal_recall_per_thousand_tokens():
    marginal = marginal_recall([(2000, 0.8), (500, 0.5), (1000, 0.7)])
    assert [(m.lower, m.upper) for m in marginal] == [(500, 1000), (1000, 2000)]
    assert marginal[0].per_1k_tokens == pytest.approx(0.4)  # 0.2 over 500 tokens
    assert marginal[1].per_1k_tokens == pytest.approx(0.1)
    assert marginal_recall([(500, 0.5)]) == []
    assert marginal_recall([(500, 0.6), (1000, 0.5)])[0].per_1k_tokens < 0


def test_overall_knee_picks_the_cheapest_near_best_configuration():
    curves = {
        "big": [(500, 0.60), (1000, 0.80), (2000, 0.90)],  # best 0.90, knee 2000
        "small": [(500, 0.70), (1000, 0.895), (2000, 0.895)],  # within 0.01, knee 1000
        "weak": [(500, 0.50), (1000, 0.50), (2000, 0.50)],  # knee 500 but far from best
    }
    name, knee = overall_knee(curves, 0.01)
    assert (name, knee.budget, knee.recall) == ("small", 1000, 0.895)
    name, _ = overall_knee(curves, 0.0)
    assert name == "big"
    tie = {"b": [(500, 0.7)], "a": [(500, 0.7)]}
    assert overall_knee(tie)[0] == "b"  # tie: the first in grid order
    with pytest.raises(ConfigError, match="no budget curves"):
        overall_knee({})


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

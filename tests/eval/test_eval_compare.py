"""The paired randomization test and run comparisons."""

from __future__ import annotations

import itertools

import pytest

from ctxselect.errors import ConfigError
from ctxselect.eval import chunk_run_by_document, compare_runs, randomization_test


def exact_p(a: list[float], b: list[float]) -> float:
    """The exact two-sided sign-flip p-value over all 2^n sign assignments."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(sum(diffs))
    hits = sum(
        1
        for signs in itertools.product((1, -1), repeat=len(diffs))
        if abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-12
    )
    return hits / 2 ** len(diffs)


def test_identical_runs_give_p_one():
    values = [0.1, 0.5, 0.9, 0.0, 1.0]
    assert randomization_test(values, values, permutations=500) == 1.0


def test_a_clearly_better_run_gets_a_small_p():
    a = [0.9, 0.8, 0.95, 0.7, 0.85, 0.9, 0.75, 0.8, 0.9, 0.88, 0.92, 0.81]
    b = [x - 0.3 for x in a]
    p = randomization_test(a, b, permutations=10_000)
    assert 1 / 10_001 <= p < 0.005  # all 12 differences positive: exact p = 2 / 4096


def test_monte_carlo_p_is_close_to_the_exact_p():
    a = [0.5, 0.7, 0.2, 0.9, 0.4, 0.6, 0.3, 0.8, 0.55, 0.65]
    b = [0.4, 0.5, 0.3, 0.6, 0.45, 0.5, 0.35, 0.5, 0.6, 0.5]
    estimate = randomization_test(a, b, permutations=10_000, seed=7)
    assert estimate == pytest.approx(exact_p(a, b), abs=0.015)


def test_the_seed_makes_p_reproducible():
    a, b = [0.3, 0.6, 0.5, 0.9, 0.1], [0.2, 0.7, 0.4, 0.5, 0.2]
    assert randomization_test(a, b, 2000, seed=1) == randomization_test(a, b, 2000, seed=1)


@pytest.mark.parametrize(
    ("a", "b", "permutations", "message"),
    [
        ([], [], 10, "non-empty"),
        ([1.0], [1.0, 2.0], 10, "equally long"),
        ([1.0], [0.0], 0, "permutations"),
    ],
)
def test_randomization_test_input_errors(a, b, permutations, message):
    with pytest.raises(ConfigError, match=message):
        randomization_test(a, b, permutations)


QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 0}}


def test_identical_runs_tie_on_every_query():
    run = {"q1": {"a": 2.0, "x": 1.0}, "q2": {"x": 2.0, "b": 1.0}, "q3": {"c": 1.0}}
    result = compare_runs(run, run, QRELS, "ndcg@10,mrr@10", permutations=1000)
    assert result.n_queries == 3 and result.permutations == 1000
    for row in result.metrics:
        assert (row.wins, row.ties, row.losses, row.p_value) == (0, 3, 0, 1.0)
        assert row.difference == 0.0 and row.mean_a == row.mean_b


def test_wins_losses_and_missing_queries_are_counted():
    better = {
        "q1": {"a": 2.0, "x": 1.0},
        "q2": {"b": 2.0, "x": 1.0},
        "q3": {"c": 1.0},
        "q4": {"d": 1.0},
    }
    worse = {"q1": {"x": 2.0, "a": 1.0}, "q2": {"b": 1.0, "x": 2.0}}  # q3 missing: scores 0
    result = compare_runs(better, worse, QRELS, ["mrr@10"], permutations=1000, seed=3)
    row = result.metrics[0]
    assert (row.wins, row.ties, row.losses) == (3, 0, 0)
    assert row.mean_a == 1.0 and row.mean_b == pytest.approx(1 / 3)
    assert row.difference == pytest.approx(2 / 3)
    assert result.missing_from_a == 0 and result.missing_from_b == 1
    assert result.excluded_no_relevant == 1  # q4: nothing judged relevant
    assert result.seed == 3


def test_a_chunk_run_is_ranked_by_each_documents_best_chunk():
    qrels = {"q1": {"a.md": 1, "b#2": 0}}
    chunks = {"q1": {"b#2#0": 3.0, "a.md#1": 2.0, "a.md#0": 2.5, "c#4": 1.0}}
    documents = chunk_run_by_document(chunks, qrels)
    assert documents is not None
    assert sorted(documents["q1"], key=lambda d: -documents["q1"][d]) == ["b#2", "a.md", "c"]
    assert documents["q1"]["a.md"] == 2.5  # its best chunk's score
    assert chunk_run_by_document({"q1": {"a.md": 1.0, "x#0": 0.5}}, qrels) is None  # a doc run
    assert chunk_run_by_document({"q1": {"x#0": 1.0, "y": 0.5}}, qrels) is None  # not all DOC#N
    assert chunk_run_by_document({"q1": {"x#0": 1.0}}, qrels) is None  # x is never judged

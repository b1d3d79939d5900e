"""Metric definitions on hand-computed cases, metric names, evaluate's conventions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import (
    METRICS,
    EvalReport,
    MetricSpec,
    collapse_to_docs,
    evaluate,
    parse_metric,
    parse_metrics,
    rank,
    ranked_ids,
)
from ctxselect.eval.metrics import (
    hit_at_k,
    map_at_k,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)

JUDGED = {"a": 2, "b": 0, "c": 1, "z": 1}  # z is relevant but never retrieved
RANKED = ["x", "a", "b", "c"]


def test_hand_computed_values():
    assert hit_at_k(RANKED, JUDGED, 1) == 0.0
    assert hit_at_k(RANKED, JUDGED, 2) == 1.0
    assert precision_at_k(RANKED, JUDGED, 4) == 0.5
    assert precision_at_k(RANKED, JUDGED, 10) == 0.2  # divides by k, not by retrieved
    assert recall_at_k(RANKED, JUDGED, 4) == pytest.approx(2 / 3)
    assert mrr_at_k(RANKED, JUDGED, 1) == 0.0
    assert mrr_at_k(RANKED, JUDGED, 4) == 0.5
    assert map_at_k(RANKED, JUDGED, 4) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert map_at_k(RANKED, JUDGED, 2) == pytest.approx((1 / 2) / 3)  # / all relevant


def test_ndcg_uses_grades_and_an_ideal_from_all_relevant_docs():
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / 1 + 1 / math.log2(3) + 1 / math.log2(4)  # grades 2, 1, 1 (z counts)
    assert ndcg_at_k(RANKED, JUDGED, 4) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "c", "z"], JUDGED, 3) == pytest.approx(1.0)
    assert ndcg_at_k(["c", "a"], JUDGED, 1) == pytest.approx(0.5)  # ideal@1 holds grade 2


def test_no_relevant_document_scores_zero_not_nan():
    for fn in METRICS.names():
        assert METRICS.get(fn)(["a"], {"a": 0}, 5) == 0.0


def test_parse_metric_accepts_name_at_k():
    assert parse_metric("ndcg@10") == MetricSpec("ndcg", 10)
    assert str(parse_metric(" Recall@100 ")) == "recall@100"
    assert parse_metrics("ndcg@10, mrr@10,ndcg@10") == (
        MetricSpec("ndcg", 10),
        MetricSpec("mrr", 10),
    )


@pytest.mark.parametrize("name", ["ndcg", "foo@10", "ndcg@0", "ndcg@x", "ndcg@-1", "p@5"])
def test_parse_metric_rejects_bad_names_listing_valid_ones(name):
    with pytest.raises(ConfigError) as info:
        parse_metric(name)
    message = str(info.value)
    assert repr(name) in message or name.split("@")[0] in message
    for valid in ("hit", "map", "mrr", "ndcg", "precision", "recall", "name@k"):
        assert valid in message


def test_no_metric_is_a_config_error():
    with pytest.raises(ConfigError, match="no metric"):
        parse_metrics(" , ")


def test_ranking_breaks_ties_on_id_ascending():
    assert rank({"b": 1.0, "a": 1.0, "c": 2.0}) == [("c", 2.0), ("a", 1.0), ("b", 1.0)]
    assert ranked_ids({"b": 1.0, "a": 1.0, "c": 2.0}, k=2) == ["c", "a"]
    with pytest.raises(InputError, match="NaN"):
        rank({"a": math.nan}, "q7")


@given(st.dictionaries(st.text(max_size=3), st.sampled_from([0.0, 1.0, 2.0]), max_size=20))
def test_ranked_ids_cut_equals_full_sort_cut(scores):
    full = ranked_ids(scores)
    for k in (1, 3, 50):
        assert ranked_ids(scores, k=k) == full[:k]


def test_evaluate_conventions():
    qrels = {
        "q1": {"a": 1},
        "q2": {"b": 0},  # judged, nothing relevant: excluded
        "q3": {"c": 2},  # not in the run: scores 0, counted in the mean
    }
    run = {"q1": {"a": 1.0, "x": 1.0}, "q2": {"b": 1.0}, "q9": {"a": 1.0}}
    report = evaluate(run, qrels, ["mrr@10", "recall@1"], doc_ids={"a", "b"})
    assert isinstance(report, EvalReport)
    assert report.metrics == ("mrr@10", "recall@1")
    assert report.per_query == {
        "q1": {"mrr@10": 1.0, "recall@1": 1.0},
        "q3": {"mrr@10": 0.0, "recall@1": 0.0},
    }
    assert report.mean == {"mrr@10": 0.5, "recall@1": 0.5}
    assert report.n_queries == 2
    assert report.excluded_no_relevant == 2  # q2 and q9
    assert report.missing_from_run == 1
    assert report.unknown_docs_in_qrels == 1  # c
    assert evaluate(run, qrels, "mrr@10").unknown_docs_in_qrels is None


def test_a_query_with_no_hit_counts_as_missing_like_an_absent_one():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    run = {"q1": {"a": 1.0}, "q2": {}}  # q2 had no hit; q3 is absent (as in a TREC file)
    report = evaluate(run, qrels, ["mrr@10"])
    assert report.missing_from_run == 2 and report.n_queries == 3
    assert report.per_query["q2"] == report.per_query["q3"] == {"mrr@10": 0.0}
    assert evaluate({"q1": {"a": 1.0}}, qrels, ["mrr@10"]) == report


def test_evaluate_refuses_disjoint_ids_and_qrels_without_relevant_docs():
    with pytest.raises(InputError, match="shares no query id"):
        evaluate({"1": {"a": 1.0}}, {"PLAIN-1": {"a": 1}}, ["ndcg@10"])
    with pytest.raises(InputError, match="none has a relevant document"):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 0}}, ["ndcg@10"])
    with pytest.raises(ConfigError):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["bleu@4"])


def test_collapse_keeps_best_chunk_per_document_in_rank_order():
    ranked = {
        "q": [("d2", 3.0), ("d1", 2.0), ("d2", 2.0), ("d3", 1.0), ("d1", 0.5)],
        "empty": [],
    }
    assert collapse_to_docs(ranked) == {"q": {"d2": 3.0, "d1": 2.0, "d3": 1.0}, "empty": {}}


def test_collapse_preserves_order_when_ties_would_flip_it():
    run = collapse_to_docs({"q": [("b", 1.0), ("a", 1.0), ("c", 1.0), ("d", 0.5)]})
    assert ranked_ids(run["q"]) == ["b", "a", "c", "d"]
    assert run["q"]["b"] == 1.0 and run["q"]["d"] == 0.5
    assert 1.0 - run["q"]["c"] < 1e-12


@given(
    st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from([0.0, 1.0, 2.0])), max_size=15)
)
def test_collapse_order_equals_first_occurrence_order(hits):
    hits = sorted(hits, key=lambda h: -h[1])  # best first, ties in any id order
    run = collapse_to_docs({"q": hits})
    assert ranked_ids(run["q"]) == list(dict.fromkeys(doc for doc, _ in hits))


def test_collapse_rejects_lists_that_are_not_best_first():
    with pytest.raises(InputError, match="not best first"):
        collapse_to_docs({"q": [("a", 1.0), ("b", 2.0)]})
    with pytest.raises(InputError, match="not best first"):
        collapse_to_docs({"q": [("a", math.nan)]})

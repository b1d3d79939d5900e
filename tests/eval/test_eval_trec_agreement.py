"""Our metrics equal trec_eval's (through pytrec-eval-terrier) on the same ranking.

trec_eval breaks score ties on the docno descending, we break them on the id
ascending; every comparison here hands trec_eval a run whose scores already encode our
order, either built by the test itself (rank-derived scores) or written by
``write_trec_run`` and read back by pytrec_eval's own parser. Queries absent from the
run are added as zeros before averaging (our ``trec_eval -c`` convention).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctxselect.eval import evaluate, load_beir_split, write_trec_run

TOL = 1e-6
# our name -> trec_eval measure (with ".k" appended); mrr is recip_rank on a cut run
TREC_NAME = {"ndcg": "ndcg_cut", "precision": "P", "recall": "recall", "map": "map_cut"}
TREC_NAME["hit"] = "success"


def ordered_by_us(scores: dict[str, float]) -> list[str]:
    """Our convention, written independently of the package: score desc, id asc."""
    return [d for d, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def rank_scored(run: dict[str, dict[str, float]], k: int | None = None) -> dict:
    """A run whose distinct scores make trec_eval see exactly our order (cut to k)."""
    out = {}
    for qid, scores in run.items():
        ids = ordered_by_us(scores)[:k]
        out[qid] = {d: float(len(ids) - i) for i, d in enumerate(ids)}
    return out


def trec_values(run: dict, qrels: dict, names: list[str], ks: list[int]) -> dict:
    """Per-query values from pytrec_eval for our metric names at the depths ``ks``."""
    judged = {qid: docs for qid, docs in qrels.items() if docs}
    measures = {f"{TREC_NAME[n]}.{k}" for n in names if n != "mrr" for k in ks}
    per_query: dict[str, dict[str, float]] = defaultdict(dict)
    if measures:
        result = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(run)
        for qid, values in result.items():
            for n in names:
                for k in ks:
                    if n != "mrr":
                        per_query[qid][f"{n}@{k}"] = values[f"{TREC_NAME[n]}_{k}"]
    if "mrr" in names:
        for k in ks:
            cut = rank_scored(run, k)
            result = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(cut)
            for qid, values in result.items():
                per_query[qid][f"mrr@{k}"] = values["recip_rank"]
    return per_query


def assert_agree(run: dict, qrels: dict, trec_run: dict, names: list[str], ks: list[int]) -> None:
    """Check per-query values and means of ``evaluate(run)`` against trec_eval's."""
    metrics = [f"{n}@{k}" for n in names for k in ks]
    ours = evaluate(run, qrels, metrics)
    theirs = trec_values(trec_run, qrels, names, ks)
    evaluated = [qid for qid, docs in qrels.items() if any(g >= 1 for g in docs.values())]
    assert sorted(ours.per_query) == sorted(evaluated)
    for metric in metrics:
        total = 0.0
        for qid in evaluated:
            expected = theirs.get(qid, {}).get(metric, 0.0) if qid in run else 0.0
            assert ours.per_query[qid][metric] == pytest.approx(expected, abs=TOL), (qid, metric)
            total += expected
        assert ours.mean[metric] == pytest.approx(total / len(evaluated), abs=TOL), metric


ALL = ["ndcg", "precision", "recall", "map", "mrr", "hit"]
doc_ids = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "B", "a-1", "a_1", "z9"])
# few distinct score values, so ties are frequent
run_scores = st.dictionaries(doc_ids, st.sampled_from([0.0, 0.25, 0.5, 1.0, 3.0]), max_size=10)
judgments = st.dictionaries(doc_ids, st.integers(min_value=0, max_value=3), max_size=8)
qids = st.sampled_from(["q1", "q2", "q3", "q4", "q5"])


@settings(max_examples=150, deadline=None)
@given(
    qrels=st.dictionaries(qids, judgments, min_size=1).filter(
        lambda q: any(g >= 1 for docs in q.values() for g in docs.values())
    ),
    run=st.dictionaries(qids, run_scores, min_size=1),
    k=st.integers(min_value=1, max_value=12),
)
def test_metrics_equal_trec_eval_on_synthetic_runs_with_ties(qrels, run, k):
    if not set(run) & set(qrels):
        return  # evaluate refuses disjoint ids; covered in test_eval_metrics
    assert_agree(run, qrels, rank_scored(run), ALL, [k])


@settings(max_examples=60, deadline=None)
@given(
    qrels=st.dictionaries(qids, judgments, min_size=1).filter(
        lambda q: any(g >= 1 for docs in q.values() for g in docs.values())
    ),
    run=st.dictionaries(qids, run_scores, min_size=1),
)
def test_written_run_with_ties_reproduces_our_metrics_in_trec_eval(tmp_path_factory, qrels, run):
    if not set(run) & set(qrels):
        return
    path = tmp_path_factory.mktemp("run") / "run.trec"
    write_trec_run(path, run)
    with open(path, encoding="utf-8") as handle:
        parsed = pytrec_eval.parse_run(handle)
    assert_agree(run, qrels, parsed, ["ndcg", "precision", "recall", "map", "hit"], [1, 3, 10])


def test_raw_ties_are_ordered_differently_by_trec_eval():
    """Why the writer nudges ties: trec_eval puts 'b' before 'a' on equal scores."""
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0}}
    raw = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert raw["q"]["recip_rank"] == 0.5
    assert evaluate(run, qrels, ["mrr@10"]).mean["mrr@10"] == 1.0


# --- a real run: a small TF-IDF written here (retrieve/ is not imported on purpose) ---

TOKEN = re.compile(r"[a-z0-9]+")


def tfidf_run(corpus_path: Path, queries: dict[str, str], depth: int) -> dict:
    """Rank documents by sum over query terms of (1 + log tf) * idf^2 / sqrt(length).

    Scores are rounded to 3 decimals so that the run has many exact ties.
    """
    postings: dict[str, list[tuple[str, float]]] = defaultdict(list)
    n_docs = 0
    with open(corpus_path, encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            terms = TOKEN.findall(f"{doc.get('title', '')} {doc['text']}".lower())
            norm = math.sqrt(len(terms)) or 1.0
            for term, tf in Counter(terms).items():
                postings[term].append((doc["_id"], (1 + math.log(tf)) / norm))
            n_docs += 1
    idf = {t: math.log(n_docs / len(p)) for t, p in postings.items()}
    run = {}
    for qid, text in queries.items():
        scores: dict[str, float] = defaultdict(float)
        for term in set(TOKEN.findall(text.lower())):
            for doc_id, weight in postings.get(term, ()):
                scores[doc_id] += weight * idf[term] ** 2
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]
        run[qid] = {doc_id: round(score, 3) for doc_id, score in best}
    return run


@pytest.mark.data
def test_real_scifact_run_agrees_with_trec_eval(scifact_dir, tmp_path):
    queries, qrels = load_beir_split(scifact_dir)
    run = tfidf_run(scifact_dir / "corpus.jsonl", queries, depth=100)
    assert sum(len(set(s.values())) < len(s) for s in run.values()) > 100  # ties abound
    path = tmp_path / "scifact.trec"
    write_trec_run(path, run, tag="tfidf")
    with open(path, encoding="utf-8") as handle:
        parsed = pytrec_eval.parse_run(handle)
    assert_agree(run, qrels, parsed, ALL, [1, 10, 100])
    report = evaluate(run, qrels, ["ndcg@10"])
    # a working keyword ranker, not noise (BM25 scores about 0.67 here)
    assert 0.45 < report.mean["ndcg@10"] < 0.8
    assert report.n_queries == 300


@pytest.mark.data
def test_real_nfcorpus_graded_ndcg_agrees_with_trec_eval(nfcorpus_dir, tmp_path):
    queries, qrels = load_beir_split(nfcorpus_dir)
    assert {g for docs in qrels.values() for g in docs.values()} >= {1, 2}
    run = tfidf_run(nfcorpus_dir / "corpus.jsonl", queries, depth=100)
    path = tmp_path / "nfcorpus.trec"
    write_trec_run(path, run)
    with open(path, encoding="utf-8") as handle:
        parsed = pytrec_eval.parse_run(handle)
    assert_agree(run, qrels, parsed, ["ndcg", "map"], [10, 100])
    assert 0.2 < evaluate(run, qrels, ["ndcg@10"]).mean["ndcg@10"] < 0.45


TIE_DOCS = ["d1", "d2", "d3", "d10", "da", "dB", "é"]


@settings(max_examples=60, deadline=None)
@given(
    # ties, and two doubles that tie in single precision
    st.dictionaries(st.sampled_from(TIE_DOCS), st.sampled_from([1.0, 0.5, 0.5000000001, -1.0])),
    st.dictionaries(st.sampled_from(TIE_DOCS), st.integers(0, 2)),
)
def test_a_run_with_ties_read_from_a_file_scores_as_trec_eval_scores_it(scores, grades):
    # compare reads runs other tools wrote; their ties must break as trec_eval breaks them
    from ctxselect.eval import in_trec_eval_order

    assume(scores and any(grades.values()))
    run, qrels = {"q": scores}, {"q": grades}
    ours = evaluate(in_trec_eval_order(run), qrels, ["ndcg@3", "recall@2"]).per_query["q"]
    theirs = trec_values(run, qrels, ["ndcg", "recall"], [3, 2])["q"]
    assert math.isclose(ours["ndcg@3"], theirs["ndcg@3"], abs_tol=TOL)
    assert math.isclose(ours["recall@2"], theirs["recall@2"], abs_tol=TOL)

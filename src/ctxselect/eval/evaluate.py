"""Score a run against qrels: per-query metric values, their means, and what was left out.

Which queries count (decided here, once):

- A query is evaluated when the qrels give it at least one relevant document
  (grade >= 1). Run queries that the qrels do not judge, or judge with no relevant
  document, are excluded and counted in ``excluded_no_relevant``. trec_eval skips the
  first kind too; it scores the second kind 0 and averages it in, which only lowers
  every system's mean by the same factor, so we leave such queries out instead.
- An evaluated query that is absent from the run, or present with no ranked document
  (a TREC run file has no line for it either), scores 0 on every metric and counts in
  the mean (``missing_from_run``), as ``trec_eval -c`` does: a retriever that returned
  nothing for a query must not look better for it. pytrec_eval has no ``-c``;
  comparisons add these zeros to its per-query values before averaging.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ctxselect.errors import InputError
from ctxselect.eval.metrics import MetricSpec, n_relevant, parse_metrics
from ctxselect.eval.ranking import ranked_ids
from ctxselect.types import Qrels

DEFAULT_METRICS = ("ndcg@10", "recall@10", "mrr@10")


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Metric values of one run on one set of qrels.

    Attributes:
        metrics: Metric names in the order asked for (``ndcg@10`` ...).
        per_query: qid -> {metric: value} for every evaluated query (missing ones are 0).
        mean: metric -> mean over the ``n_queries`` evaluated queries.
        n_queries: Queries in the mean: qrels queries with a relevant document.
        excluded_no_relevant: Run queries left out because no judged document of
            theirs is relevant (or the qrels do not know them).
        missing_from_run: Evaluated queries the run has no entry or no ranked document
            for (scored 0).
        unknown_docs_in_qrels: Judged (query, document) pairs whose document is not in
            the corpus given to :func:`evaluate`; None when no corpus was given.
    """

    metrics: tuple[str, ...]
    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]
    n_queries: int
    excluded_no_relevant: int
    missing_from_run: int
    unknown_docs_in_qrels: int | None = None


def evaluate(
    run: Mapping[str, Mapping[str, float]],
    qrels: Qrels,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    *,
    doc_ids: Collection[str] | None = None,
) -> EvalReport:
    """Compute ``metrics`` for ``run`` against ``qrels``.

    The run is ranked by score descending with ties broken by id ascending (our
    convention), and every metric is computed on that order.

    Args:
        run: qid -> {doc_id: score}, higher is better.
        qrels: qid -> {doc_id: grade}; grade >= 1 is relevant.
        metrics: Names such as ``ndcg@10``, as a list or one comma-separated string.
        doc_ids: The corpus's document ids; when given, judged documents missing from
            it are counted in ``unknown_docs_in_qrels``.

    Raises:
        ConfigError: A metric name is invalid.
        InputError: No qrels query has a relevant document, or the run shares no query
            id with the qrels (almost always mismatched ids), or a score is NaN.
    """
    specs = parse_metrics(metrics)
    names = tuple(str(spec) for spec in specs)
    evaluated = sorted(qid for qid, judged in qrels.items() if n_relevant(judged) > 0)
    _check_overlap(run, qrels, evaluated)
    depth = max(spec.k for spec in specs)
    per_query: dict[str, dict[str, float]] = {}
    missing = 0
    for qid in evaluated:
        if not run.get(qid):  # absent, or no hit: the same once written as a TREC run
            missing += 1
            per_query[qid] = dict.fromkeys(names, 0.0)
            continue
        per_query[qid] = _score_query(ranked_ids(run[qid], qid, depth), qrels[qid], specs)
    n = len(evaluated)
    mean = {name: sum(values[name] for values in per_query.values()) / n for name in names}
    wanted = set(evaluated)
    return EvalReport(
        metrics=names,
        per_query=per_query,
        mean=mean,
        n_queries=n,
        excluded_no_relevant=sum(1 for qid in run if qid not in wanted),
        missing_from_run=missing,
        unknown_docs_in_qrels=None if doc_ids is None else count_unknown_docs(qrels, doc_ids),
    )


def _score_query(
    ranked: Sequence[str], judged: Mapping[str, int], specs: Sequence[MetricSpec]
) -> dict[str, float]:
    return {str(spec): spec.compute(ranked, judged) for spec in specs}


def _check_overlap(run: Mapping[str, object], qrels: Qrels, evaluated: list[str]) -> None:
    if not evaluated:
        raise InputError(
            f"the qrels hold {len(qrels)} queries but none has a relevant document "
            "(grade >= 1): check the qrels file and its grade column"
        )
    if not any(qid in qrels for qid in run):
        run_ids = ", ".join(sorted(run)[:3]) or "none"
        qrels_ids = ", ".join(evaluated[:3])
        raise InputError(
            f"the run shares no query id with the qrels (run: {run_ids}...; qrels: "
            f"{qrels_ids}...): use the same query ids in both, e.g. the queries file's ids"
        )


def count_unknown_docs(qrels: Qrels, doc_ids: Collection[str]) -> int:
    """Count judged (query, document) pairs whose document is not in ``doc_ids``."""
    known = doc_ids if isinstance(doc_ids, set | frozenset) else set(doc_ids)
    return sum(1 for judged in qrels.values() for doc_id in judged if doc_id not in known)

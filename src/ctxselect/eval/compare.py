"""Compare two runs on the same queries: paired differences and a randomization test.

The test is the two-sided paired randomization (sign-flip) test that Smucker, Allan &
Carterette (2007) recommend for IR: under the null hypothesis the two systems are
exchangeable per query, so each per-query difference a_i − b_i is equally likely to have
either sign. The p-value is the share of random sign assignments whose mean difference
is at least as far from 0 as the observed one, counted as (1 + hits) / (1 + permutations)
(Phipson & Smyth 2010), so it is never 0 and identical runs give exactly 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxselect.config import PERMUTATIONS, SEED
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.evaluate import evaluate
from ctxselect.eval.metrics import parse_metrics
from ctxselect.eval.ranking import collapse_to_docs
from ctxselect.types import Qrels, Run

DEFAULT_PERMUTATIONS = 10_000
DEFAULT_SEED = 20_240_601
_BLOCK = 2_000  # sign matrices are built this many permutations at a time (memory)
_TIE = 1e-12  # per-query values closer than this are a tie


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One metric of a paired comparison: means, difference, p-value, wins/ties/losses.

    ``difference`` is mean(A) − mean(B); ``wins`` counts queries where A scores higher.
    """

    metric: str
    mean_a: float
    mean_b: float
    difference: float
    p_value: float
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True, slots=True)
class Comparison:
    """A paired comparison of run A against run B on the same judged queries.

    Attributes:
        metrics: One entry per metric, in the order asked for.
        n_queries: Judged queries with a relevant document (the pairs compared).
        permutations: Random sign assignments drawn per metric.
        seed: Seed of the random generator (numpy PCG64), so the p-values reproduce.
        excluded_no_relevant: Run queries left out because no judged document of theirs
            is relevant (or the qrels do not know them), counted over both runs.
        missing_from_a: Judged queries run A has no entry for (scored 0).
        missing_from_b: Judged queries run B has no entry for (scored 0).
        run_a: Name of run A (its file); ``run_b`` likewise.
        by_document: The runs (their names) that ranked chunks (``DOC#N`` ids, as
            ``eval --level chunk --run-out`` writes) and were scored by document, each
            document ranked by its best chunk as ``eval --level doc`` ranks them.
    """

    metrics: tuple[MetricComparison, ...]
    n_queries: int
    permutations: int
    seed: int
    excluded_no_relevant: int
    missing_from_a: int
    missing_from_b: int
    run_a: str = ""
    run_b: str = ""
    by_document: tuple[str, ...] = ()


def chunk_run_by_document(run: Mapping[str, Mapping[str, float]], qrels: Qrels) -> Run | None:
    """Turn a chunk run into a document run by best chunk, if it is one; else None.

    A run is a chunk run when none of its ids is a judged document while every id reads
    ``DOC#N`` and some such ``DOC`` is judged: the ids ``eval --level chunk`` writes.
    Scored as it stands, such a run would score 0 on every document judgment.
    """
    judged = {doc for judgments in qrels.values() for doc in judgments}
    ids = {chunk_id for ranked in run.values() for chunk_id in ranked}
    if not ids or not ids.isdisjoint(judged):
        return None
    docs = {chunk_id: _document_of(chunk_id) for chunk_id in ids}
    if "" in docs.values() or judged.isdisjoint(docs.values()):
        return None
    return collapse_to_docs(
        {
            qid: [(docs[c], score) for c, score in sorted(ranked.items(), key=_best_first)]
            for qid, ranked in run.items()
        }
    )


def _document_of(chunk_id: str) -> str:
    """``DOC`` of a chunk id ``DOC#N`` ("" when the id does not read so)."""
    doc, sep, ordinal = chunk_id.rpartition("#")
    return doc if sep and doc and ordinal.isdigit() else ""


def _best_first(item: tuple[str, float]) -> tuple[float, str]:
    return -item[1], item[0]  # ties break on the id, as rankings do


def randomization_test(
    a: Sequence[float],
    b: Sequence[float],
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> float:
    """Return the two-sided p-value of the paired randomization test of mean(a − b) = 0.

    Raises:
        ConfigError: The sequences differ in length or are empty, or ``permutations``
            or ``seed`` is out of range (``config.PERMUTATIONS``, ``config.SEED``).
    """
    import numpy as np

    if len(a) != len(b) or not a:
        raise ConfigError(
            f"a paired test needs two equally long, non-empty lists, got {len(a)} and {len(b)}"
        )
    PERMUTATIONS.check(permutations)
    SEED.check(seed)  # numpy refuses a negative seed with a traceback
    diffs = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    observed = abs(float(diffs.mean()))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, _BLOCK):
        size = min(_BLOCK, permutations - start)
        signs = rng.integers(0, 2, size=(size, diffs.size), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diffs) / diffs.size
        hits += int(np.count_nonzero(means >= observed - _TIE))
    return (1 + hits) / (1 + permutations)


def compare_runs(
    run_a: Mapping[str, Mapping[str, float]],
    run_b: Mapping[str, Mapping[str, float]],
    qrels: Qrels,
    metrics: Sequence[str] | str,
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare two runs per metric on the judged queries (see :func:`.evaluate`).

    A judged query missing from one run scores 0 there, as in ``evaluate``; the pairs
    are the same queries for both runs, so the test is paired.

    Raises:
        ConfigError: A metric name is invalid (budget metrics need selections, not runs).
        InputError: As :func:`.evaluate` for either run.
    """
    names = [str(spec) for spec in parse_metrics(metrics)]
    report_a = evaluate(run_a, qrels, names)
    report_b = evaluate(run_b, qrels, names)
    qids = sorted(report_a.per_query)
    if qids != sorted(report_b.per_query):
        raise InputError("the two runs were judged on different queries")  # same qrels: never
    rows = []
    for name in names:
        a = [report_a.per_query[q][name] for q in qids]
        b = [report_b.per_query[q][name] for q in qids]
        wins = sum(1 for x, y in zip(a, b, strict=True) if x - y > _TIE)
        losses = sum(1 for x, y in zip(a, b, strict=True) if y - x > _TIE)
        rows.append(
            MetricComparison(
                metric=name,
                mean_a=report_a.mean[name],
                mean_b=report_b.mean[name],
                difference=report_a.mean[name] - report_b.mean[name],
                p_value=randomization_test(a, b, permutations, seed),
                wins=wins,
                ties=len(qids) - wins - losses,
                losses=losses,
            )
        )
    excluded = {q for q in run_a if q not in report_a.per_query}
    excluded |= {q for q in run_b if q not in report_b.per_query}
    return Comparison(
        metrics=tuple(rows),
        n_queries=len(qids),
        permutations=permutations,
        seed=seed,
        excluded_no_relevant=len(excluded),
        missing_from_a=report_a.missing_from_run,
        missing_from_b=report_b.missing_from_run,
    )

"""Score a labeled set on an open index: the blocks of ``evaluate_corpus``.

:func:`plan_eval` checks what to measure; :func:`score_labeled` ranks every query (by
document or by chunk), scores the run with the ranking metrics, selects under each budget
as ``Index.select`` does and adds the budget metrics, per query and on average;
:func:`with_empty_documents` tells judgments of documents ingest skipped as empty apart
from unknown ones (``eval`` and ``sweep``). :mod:`ctxselect.api.evaluate` indexes the
corpus, opens the index and reports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxselect import budget as _budget
from ctxselect import eval as _eval
from ctxselect.api.filters import Globs, Where, make_filter
from ctxselect.api.read import Index
from ctxselect.api.selections import (
    CALIBRATION_DEPTH,
    MemoCounter,
    measure_budgets,
    plan_stop,
    selection_depth,
)
from ctxselect.budget.stop import check_stop
from ctxselect.config import check_budget_range
from ctxselect.errors import ConfigError
from ctxselect.eval import MetricSpec
from ctxselect.ingest.walk import BEIR_CORPUS, is_beir_folder
from ctxselect.types import Filter, Qrels

__all__ = [
    "EvalPlan",
    "EvalScores",
    "plan_eval",
    "ranked_documents",
    "score_labeled",
    "with_empty_documents",
]


def with_empty_documents(
    labeled: _eval.LabeledSet,
    corpus: str | os.PathLike[str],
    doc_ids: Collection[str],
    empty: int,
) -> _eval.LabeledSet:
    """``labeled`` with judgments of empty documents counted apart from unknown ones.

    ``empty`` is how many documents ingest skipped as empty (0: nothing to look for).
    A BEIR dataset folder is looked up in the ``corpus.jsonl`` ingest read from it.
    """
    if not (labeled.unknown_docs and empty):
        return labeled
    path = Path(corpus)
    if path.is_dir() and is_beir_folder({p.name for p in path.iterdir()}):
        path = path / BEIR_CORPUS
    return _eval.note_empty_documents(labeled, path, doc_ids)


@dataclass(frozen=True, slots=True)
class EvalPlan:
    """What ``evaluate_corpus`` measures, checked.

    Attributes:
        mode: Retrieval mode.
        level: ``doc`` or ``chunk``: what the ranking metrics judge.
        ranking: The ranking metrics (``ndcg@10``).
        depth: Documents (chunks at chunk level) ranked per query.
        budgets: Token budgets to select under, ascending: those given and those the
            budget metrics name.
        packer: Packer of the budgeted selections.
        format: Their framing.
        stop: Their stopping rule: ``none``, ``auto`` or a P threshold.
        stored_calibration: Stop with the index's stored calibration.
        filter: What every ranking is restricted to.
    """

    mode: str
    level: str
    ranking: tuple[MetricSpec, ...]
    depth: int
    budgets: tuple[int, ...]
    packer: str
    format: str
    stop: str | float
    stored_calibration: bool
    filter: Filter


@dataclass(frozen=True, slots=True)
class EvalScores:
    """A labeled set scored on an index.

    Attributes:
        run: qid -> {doc_id, or chunk_id at chunk level: score}: the ranking scored.
        per_query: qid -> {metric: value}, ranking and budget metrics.
        means: metric -> mean over the queries scored.
        n_queries: Queries in the ranking metrics' means (:class:`ctxselect.eval.EvalReport`).
        excluded_no_relevant: Run queries left out: no judged document of theirs is relevant.
        missing_from_run: Evaluated queries the run has no entry or no hit for (scored 0).
        search_seconds: Seconds the ranking took.
        calibration: What calibration the stopping rule used ("" for ``none``).
    """

    run: dict[str, dict[str, float]]
    per_query: dict[str, dict[str, float]]
    means: dict[str, float]
    n_queries: int
    excluded_no_relevant: int
    missing_from_run: int
    search_seconds: float
    calibration: str


def plan_eval(
    mode: str,
    metrics: Sequence[str] | str,
    budgets: Sequence[int],
    *,
    level: str,
    packer: str,
    format: str,
    depth: int | None,
    stop: str | float,
    stored_calibration: bool,
    include: Globs,
    exclude: Globs,
    where: Where,
) -> EvalPlan:
    """Check the arguments of ``evaluate_corpus`` into what it measures.

    Raises:
        ConfigError: A metric, level, budget, packer, format, stopping rule or filter is
            invalid, or ``depth`` is below the largest metric ``k``.
    """
    _eval.check_level(level)
    stop = check_stop(stop)
    filter = make_filter(include, exclude, where)
    ranking, budget_specs = _eval.split_metrics(metrics)
    for value in budgets:
        check_budget_range(_budget.check_budget(value))  # select's range and words
    for spec in budget_specs:
        try:
            check_budget_range(spec.budget)
        except ConfigError as exc:
            raise ConfigError(f"metric {spec}: {exc}") from None
    wanted = sorted({*(int(b) for b in budgets), *(b.budget for b in budget_specs)})
    if not wanted and (stop != "none" or stored_calibration):
        what = f"stop={stop}" if stop != "none" else "stored_calibration"
        raise ConfigError(
            f"{what} only changes where budgeted selections stop, and no budget is given, "
            "so it would measure nothing: add budgets (--budgets 1000,2000, or a budget "
            "metric such as recall@2000t), or leave it out"
        )
    if stored_calibration and stop == "none":
        raise ConfigError(
            "stored_calibration only changes how a stop rule reads P(relevant), and the "
            "stop rule is none (fill the budget), so it would change nothing: add a stop "
            "rule (--stop auto or a P threshold), or leave it out"
        )
    _budget.PACKERS.check(packer)
    _budget.FORMATS.check(format)
    return EvalPlan(
        mode=mode,
        level=level,
        ranking=ranking,
        depth=_eval.run_depth(depth, ranking),
        budgets=tuple(wanted),
        packer=packer,
        format=format,
        stop=stop,
        stored_calibration=stored_calibration,
        filter=filter,
    )


def score_labeled(idx: Index, labeled: _eval.LabeledSet, plan: EvalPlan) -> EvalScores:
    """Rank the labeled queries on ``idx`` as ``plan`` says and score the rankings.

    Raises:
        ConfigError: A P threshold with ``stored_calibration`` on an index that stores
            no calibration for the mode (checked before anything is ranked).
    """
    _check_stored_calibration(idx, plan)
    started = time.perf_counter()
    run, judged = _ranked_run(idx, labeled, plan.level, plan.depth, plan.mode, plan.filter)
    search_seconds = time.perf_counter() - started
    ranking = [str(spec) for spec in plan.ranking]
    # evaluate() needs one metric; with budget metrics alone, hit@1 is computed unused
    scored = _eval.evaluate(run, judged, ranking or ["hit@1"])
    values = {q: {m: v[m] for m in ranking} for q, v in scored.per_query.items()}
    calibration = _add_budget_values(values, idx, labeled, plan) if plan.budgets else ""
    means = {name: scored.mean[name] for name in ranking}
    for name in (n for b in plan.budgets for n in _eval.budget_metric_names(b)):
        means[name] = sum(values[q][name] for q in labeled.queries) / len(labeled.queries)
    return EvalScores(
        run=run,
        per_query=values,
        means=means,
        n_queries=scored.n_queries,
        excluded_no_relevant=scored.excluded_no_relevant,
        missing_from_run=scored.missing_from_run,
        search_seconds=round(search_seconds, 3),
        calibration=calibration,
    )


def _check_stored_calibration(idx: Index, plan: EvalPlan) -> None:
    """Refuse a P threshold that would read P(relevant) from a calibration the index lacks:
    every chunk would count as P = 0 and every selection would be empty."""
    if not (plan.budgets and plan.stored_calibration and isinstance(plan.stop, float)):
        return
    mode = plan.mode or idx.settings.default_mode
    if idx.calibration(mode) is None:
        raise ConfigError(
            f"stop={plan.stop:g} with the stored calibration needs P(relevant) for mode "
            f"{mode}, and index {idx.path} stores no calibration for it: run `ctxselect "
            f"tune --index {idx.path} --queries ... --qrels ...` first, or drop "
            "--stored-calibration to calibrate out of sample on these labels"
        )


def ranked_documents(
    index: Index,
    queries: Mapping[str, str],
    k: int,
    mode: str | None = None,
    filter: Filter | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Rank documents per query by their best chunk, ``k`` distinct documents deep.

    Chunks are fetched in growing depth until ``k`` distinct documents are found or the
    ranking runs out, so the document ranking is exact however documents are chunked.
    ``filter`` restricts the ranking as ``Index.search`` does.
    """
    where = _filter_args(filter)
    return _eval.rank_documents(
        lambda q, depth: index.search_many(q, depth, mode, **where), queries, k
    )


def _filter_args(filter: Filter | None) -> dict[str, Any]:
    """A filter as ``Index.search_many``'s keyword arguments."""
    if not filter:
        return {}
    return {"include": filter.include, "exclude": filter.exclude, "where": filter.where}


def _ranked_run(
    idx: Index,
    labeled: _eval.LabeledSet,
    level: str,
    depth: int,
    mode: str | None,
    filter: Filter | None = None,
) -> tuple[dict[str, dict[str, float]], Qrels]:
    """The run to score and the judgments it is scored on, at document or chunk level."""
    if level == "doc":
        ranked = ranked_documents(idx, labeled.queries, depth, mode, filter)
        return _eval.collapse_to_docs(ranked), labeled.labels.qrels
    hits = idx.search_many(labeled.queries, depth, mode, **_filter_args(filter))
    run = {qid: {h.chunk_id: h.score for h in ranked} for qid, ranked in hits.items()}
    table = idx.table
    judged = labeled.labels.chunk_qrels(table.chunk_ids, table.doc_ids, table.starts, table.ends)
    return run, judged


def _add_budget_values(
    values: dict[str, dict[str, float]], idx: Index, labeled: _eval.LabeledSet, plan: EvalPlan
) -> str:
    """Select under each budget as ``Index.select`` does; add the budget metrics per query.

    Returns what calibration the stopping rule used ("" for ``none``).
    """
    n_tokens = idx.table.n_tokens
    depth = max(selection_depth(max(plan.budgets), n_tokens), CALIBRATION_DEPTH)
    hits = idx.search_many(labeled.queries, depth, plan.mode, **_filter_args(plan.filter))
    stop = plan_stop(
        plan.stop,
        hits,
        labeled.labels,
        sum(n_tokens) / max(1, len(n_tokens)),
        stored=idx.calibration(plan.mode),
        use_stored=plan.stored_calibration,
    )
    measured = measure_budgets(
        hits,
        labeled.labels,
        [(plan.packer, b) for b in plan.budgets],
        counter=MemoCounter(idx.chunk_spec.tokenizer),
        n_tokens=n_tokens,
        span_text=idx.store.span_text,
        format=plan.format,
        stop=stop,
    )
    for per_query in measured.values():
        for qid, scores in per_query.items():
            values.setdefault(qid, {}).update(scores)
    return stop.calibration

"""Metrics of a token-budgeted selection: did the answer make it into the context?

A selection is judged against labels like a run is (see :mod:`.evaluate`): only queries
with a relevant document count, and a counted query with no selection scores 0. Budget
metric names end in ``t`` (tokens): for a selection made under a budget of B tokens,

- ``recall@Bt``: the fraction of the query's relevant documents (with span labels: of its
  relevant spans) that a selected piece covers (a piece covers its document when that
  document is relevant, and a span when it overlaps it; :class:`~.labels.Labels`
  decides); as in ``recall@k``, a judged-relevant document missing from the corpus
  still counts. The mean is the mean fraction over queries. Results version 2 on; before,
  ``recall@Bt`` meant what ``hit@Bt`` means now.
- ``hit@Bt``: 1 when at least one selected piece is relevant, else 0; the mean is the
  share of queries whose answer made it into the context ("answer in context").
- ``relevant-tokens@Bt``: the share of the selection's tokens (framing included) that
  come from relevant documents; with span labels a piece's tokens count in proportion
  to its characters inside relevant spans. 0 for an empty selection.
- ``tokens_used@Bt``: tokens the selection uses, framing included.
- ``chunks@Bt``: chunks in the selection (merged neighbours count one each).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.labels import Labels
from ctxselect.eval.metrics import RELEVANT, MetricSpec, n_relevant, parse_metric
from ctxselect.types import Qrels, Selection

BUDGET_METRICS = ("recall", "hit", "relevant-tokens", "tokens_used", "chunks")
"""Budget metric names, without ``@Bt``."""

_BUDGET_NAME = re.compile(r"^([a-z_-]+)@([0-9]+)t$")
_LOOKS_BUDGET = re.compile(r"^[a-z_-]+@[^@]*t$")


@dataclass(frozen=True, slots=True)
class BudgetMetricSpec:
    """One parsed budget metric name: ``recall@2000t`` is ``BudgetMetricSpec("recall", 2000)``."""

    name: str
    budget: int

    def __str__(self) -> str:
        return f"{self.name}@{self.budget}t"


def is_budget_metric(name: str) -> bool:
    """Tell whether ``name`` is meant as a budget metric (written ``name@...t``)."""
    return _LOOKS_BUDGET.match(name.strip().lower()) is not None


def parse_budget_metric(name: str) -> BudgetMetricSpec:
    """Parse ``recall@2000t`` and the like.

    Raises:
        ConfigError: The name is not ``name@<budget>t`` with a known name.
    """
    match = _BUDGET_NAME.match(name.strip().lower())
    valid = ", ".join(BUDGET_METRICS)
    if match is None or match.group(1) not in BUDGET_METRICS:
        raise ConfigError(
            f"unknown budget metric {name!r}: write name@<tokens>t with name one of "
            f"{valid}, e.g. recall@2000t"
        )
    return BudgetMetricSpec(match.group(1), int(match.group(2)))


def split_metrics(
    names: Sequence[str] | str,
) -> tuple[tuple[MetricSpec, ...], tuple[BudgetMetricSpec, ...]]:
    """Parse ranking metrics (``ndcg@10``) and budget metrics (``recall@2000t``) apart.

    Raises:
        ConfigError: A name is invalid, or no name is given.
    """
    items = [i.strip() for i in (names.split(",") if isinstance(names, str) else names)]
    items = [i for i in items if i]
    if not items:
        raise ConfigError("no metric given: pass at least one name@k, e.g. ndcg@10")
    ranking = tuple(dict.fromkeys(parse_metric(i) for i in items if not is_budget_metric(i)))
    budget = tuple(dict.fromkeys(parse_budget_metric(i) for i in items if is_budget_metric(i)))
    return ranking, budget


def ranking_metric_names(names: Sequence[str] | str) -> tuple[str, ...]:
    """Parse ranking metric names only (a sweep measures budget metrics on its own).

    Raises:
        ConfigError: A name is invalid or is a budget metric.
    """
    ranking, budget = split_metrics(names)
    if budget:
        raise ConfigError(
            f"{budget[0]} is a budget metric: here give ranking metrics (name@k, e.g. "
            "ndcg@10); {', '.join(BUDGET_METRICS)} @Bt are measured for every budget "
            "of the grid"
        )
    return tuple(str(spec) for spec in ranking)


def budget_metric_names(budget: int) -> tuple[str, ...]:
    """Every budget metric's name at ``budget`` tokens, in :data:`BUDGET_METRICS` order."""
    return tuple(str(BudgetMetricSpec(name, budget)) for name in BUDGET_METRICS)


def _relevant_units(labels: Labels, qid: str) -> list[tuple[str, int, int]]:
    """The query's relevant units as (doc_id, start, end): whole documents, or spans."""
    if labels.kind != "spans":
        judged = labels.qrels.get(qid, {})
        return [(doc_id, -1, -1) for doc_id, grade in judged.items() if grade >= RELEVANT]
    return [
        (doc_id, span.start, span.end)
        for doc_id, spans in labels.spans.get(qid, {}).items()
        for span in spans
        if span.grade >= RELEVANT
    ]


def _covered(units: Sequence[tuple[str, int, int]], doc_id: str, start: int, end: int) -> set[int]:
    """Indexes of ``units`` that the piece ``[start, end)`` of ``doc_id`` covers."""
    return {
        i
        for i, (unit_doc, lo, hi) in enumerate(units)
        if unit_doc == doc_id and (lo < 0 or (lo < end and start < hi))
    }


def score_selection(selection: Selection, labels: Labels, qid: str) -> dict[str, float]:
    """Score one query's selection on every budget metric (names without ``@Bt``)."""
    relevant_tokens = 0.0
    found = False
    units = _relevant_units(labels, qid)
    covered: set[int] = set()
    for piece in selection.chunks:
        if labels.grade(qid, piece.doc_id, piece.start, piece.end) >= RELEVANT:
            found = True
            covered |= _covered(units, piece.doc_id, piece.start, piece.end)
            width = piece.end - piece.start
            chars = labels.relevant_chars(qid, piece.doc_id, piece.start, piece.end)
            relevant_tokens += piece.tokens * (chars / width if width else 1.0)
    used = selection.tokens_used
    return {
        "recall": len(covered) / len(units) if units else 0.0,
        "hit": 1.0 if found else 0.0,
        "relevant-tokens": relevant_tokens / used if used else 0.0,
        "tokens_used": float(used),
        "chunks": float(sum(len(piece.chunk_ids) for piece in selection.chunks)),
    }


def budget_scores(
    selections: Mapping[str, Selection], labels: Labels, budget: int
) -> dict[str, dict[str, float]]:
    """Return qid -> {``recall@Bt``: ..., ...} for every evaluated query of ``labels``.

    An evaluated query without a selection scores 0 on every budget metric.

    Raises:
        InputError: No query has a relevant document or span.
    """
    evaluated = labels.evaluated()
    if not evaluated:
        raise InputError(
            "no labeled query has a relevant document (grade >= 1): nothing to measure"
        )
    names = dict(zip(BUDGET_METRICS, budget_metric_names(budget), strict=True))
    out: dict[str, dict[str, float]] = {}
    for qid in evaluated:
        selection = selections.get(qid)
        values = score_selection(selection, labels, qid) if selection else {}
        out[qid] = {names[m]: values.get(m, 0.0) for m in BUDGET_METRICS}
    return out


def _evaluated(qrels: Qrels) -> list[str]:
    qids = sorted(qid for qid, judged in qrels.items() if n_relevant(judged) > 0)
    if not qids:
        raise InputError("no qrels query has a relevant document (grade >= 1): nothing to measure")
    return qids


def answered_queries(selected: Mapping[str, Sequence[str]], qrels: Qrels) -> list[str]:
    """Return the evaluated queries whose selection holds a relevant document, sorted.

    Args:
        selected: qid -> doc ids of the chunks selected for it (repeats allowed).
        qrels: qid -> {doc_id: grade}.
    """
    return [
        qid
        for qid in _evaluated(qrels)
        if any(qrels[qid].get(doc_id, 0) >= RELEVANT for doc_id in selected.get(qid, ()))
    ]


def hit_at_budget(selected: Mapping[str, Sequence[str]], qrels: Qrels) -> float:
    """Return the share of queries with a relevant document inside their selection.

    This is ``hit@<budget>t`` in the metric language (``recall@<budget>t`` before
    results version 2, when this function was named ``recall_at_budget``): the
    selection already fits the budget, so only whether the answer is in it is measured.

    Raises:
        InputError: No qrels query has a relevant document.
    """
    return len(answered_queries(selected, qrels)) / len(_evaluated(qrels))


recall_at_budget = hit_at_budget
"""Former name of :func:`hit_at_budget` (it measures a hit rate, not recall); kept so
code written against it keeps working."""


def relevant_tokens_share(selected: Mapping[str, Sequence[tuple[str, int]]], qrels: Qrels) -> float:
    """Return the mean share of selected tokens that come from relevant documents.

    Args:
        selected: qid -> ``(doc_id, tokens)`` of every selected chunk.
        qrels: qid -> {doc_id: grade}.

    Returns:
        The mean over evaluated queries of relevant tokens / selected tokens; a query
        with nothing selected scores 0. 1.0 means no token was spent off-answer.

    Raises:
        InputError: No qrels query has a relevant document, or a token count is < 0.
    """
    qids = _evaluated(qrels)
    total = 0.0
    for qid in qids:
        pieces = selected.get(qid, ())
        if any(tokens < 0 for _, tokens in pieces):
            raise InputError(f"selection of query {qid!r} has a negative token count")
        used = sum(tokens for _, tokens in pieces)
        relevant = sum(t for d, t in pieces if qrels[qid].get(d, 0) >= RELEVANT)
        total += relevant / used if used else 0.0
    return total / len(qids)

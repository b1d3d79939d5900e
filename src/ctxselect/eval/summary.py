"""Turn a sweep's result rows into curves, knees, the cost table and the lab-style tables.

A *curve* is one configuration's budget sweep (chunker, size, mode, packer: recall@Bt
and friends per budget); a *size point* is one (chunker, size, mode) with its ranking
metrics. Tables render with :mod:`.tables` in the lab's layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from ctxselect.errors import InputError
from ctxselect.eval.budget_metrics import BUDGET_METRICS, BudgetMetricSpec
from ctxselect.eval.cost import SessionCost
from ctxselect.eval.grid import SweepGrid
from ctxselect.eval.knee import Knee, find_knee, marginal_recall, overall_knee
from ctxselect.eval.results import ResultRow

MEAN_CHUNK_TOKENS = "mean-chunk-tokens"
TOP3_TOKENS = "top3-tokens"
CHUNK_STATS = (MEAN_CHUNK_TOKENS, TOP3_TOKENS)


def curve_label(chunker: str, size: int, mode: str, packer: str) -> str:
    """Name a configuration: ``tokens-512/bm25/skip``."""
    return f"{chunker}-{size}/{mode}/{packer}"


@dataclass(frozen=True, slots=True)
class BudgetPoint:
    """One budget of a curve: the lab's budget row plus the budget metrics."""

    budget: int
    answered: int
    n_queries: int
    recall: float
    relevant_tokens: float
    tokens_used: float
    chunks: float
    per_1k_tokens: float | None

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "budget (tok)",
        "answer in context",
        "recall@Bt",
        "relevant tokens",
        "tokens used",
        "avg chunks",
        "recall/1k tok",
    )

    def headers(self) -> tuple[str, ...]:
        """Column headers."""
        return self.COLUMNS

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed."""
        marginal = "-" if self.per_1k_tokens is None else f"{self.per_1k_tokens:+.4f}"
        return (
            str(self.budget),
            f"{self.answered}/{self.n_queries}",
            f"{self.recall:.4f}",
            f"{self.relevant_tokens:.4f}",
            f"{self.tokens_used:.0f}",
            f"{self.chunks:.1f}",
            marginal,
        )


@dataclass(frozen=True, slots=True)
class Curve:
    """One configuration's budget sweep and its knee."""

    label: str
    chunker: str
    size: int
    mode: str
    packer: str
    points: tuple[BudgetPoint, ...]
    knee: Knee

    def recall_at(self, budget: int) -> float | None:
        """recall@Bt at ``budget``, or None when that budget was not swept."""
        return next((p.recall for p in self.points if p.budget == budget), None)


@dataclass(frozen=True, slots=True)
class KneeRow:
    """A curve's knee as a table row, with recall at four times the knee."""

    label: str
    knee: Knee
    recall_at_4x: float | None

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "configuration",
        "knee (tok)",
        "recall@knee",
        "recall@4×knee",
        "best recall",
        "best at (tok)",
    )

    def headers(self) -> tuple[str, ...]:
        """Column headers."""
        return self.COLUMNS

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed; ``*`` marks a knee at the largest budget."""
        at_4x = "-" if self.recall_at_4x is None else f"{self.recall_at_4x:.4f}"
        return (
            self.label,
            f"{self.knee.budget}{'*' if self.knee.at_edge else ''}",
            f"{self.knee.recall:.4f}",
            at_4x,
            f"{self.knee.best_recall:.4f}",
            str(self.knee.best_budget),
        )


def knee_row(curve: Curve) -> KneeRow:
    """Build the knee row of ``curve``."""
    return KneeRow(curve.label, curve.knee, curve.recall_at(4 * curve.knee.budget))


@dataclass(frozen=True, slots=True)
class SizePoint:
    """One (chunker, size, mode): chunk count and size, ranking metrics (lab size table)."""

    chunker: str
    size: int
    mode: str
    chunks: int
    n_queries: int
    mean_chunk_tokens: float
    top3_tokens: float
    metrics: dict[str, float] = field(default_factory=dict)

    def headers(self) -> tuple[str, ...]:
        """Column headers; ``top-1 correct`` when ``hit@1`` was measured."""
        names = [("top-1 correct" if m == "hit@1" else m) for m in self.metrics]
        return ("chunker", "size", "mode", "chunks", *names, "tok/chunk", "tok for top-3")

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed."""
        values = [
            f"{round(v * self.n_queries)}/{self.n_queries}" if m == "hit@1" else f"{v:.4f}"
            for m, v in self.metrics.items()
        ]
        return (
            self.chunker,
            str(self.size),
            self.mode,
            str(self.chunks),
            *values,
            f"{self.mean_chunk_tokens:.0f}",
            f"{self.top3_tokens:.0f}",
        )


def _index(rows: Sequence[ResultRow]) -> dict[tuple[object, ...], ResultRow]:
    return {(r.chunker, r.size, r.mode, r.packer, r.budget, r.metric): r for r in rows}


def _value(found: dict[tuple[object, ...], ResultRow], key: tuple[object, ...]) -> ResultRow:
    row = found.get(key)
    if row is None:
        raise InputError(f"the sweep results lack {key}: re-run the sweep to measure it")
    return row


def size_points(
    rows: Sequence[ResultRow], grid: SweepGrid, metrics: Sequence[str]
) -> list[SizePoint]:
    """Collect each (chunker, size, mode) of ``grid`` from ``rows``, in grid order."""
    found = _index(rows)
    out = []
    for chunker, size in grid.chunkings():
        for mode in grid.modes:
            got = {m: _value(found, (chunker, size, mode, None, None, m)) for m in metrics}
            stats = {s: _value(found, (chunker, size, mode, None, None, s)) for s in CHUNK_STATS}
            first = stats[MEAN_CHUNK_TOKENS]
            out.append(
                SizePoint(
                    chunker,
                    size,
                    mode,
                    first.chunks,
                    first.queries,
                    stats[MEAN_CHUNK_TOKENS].value,
                    stats[TOP3_TOKENS].value,
                    {m: r.value for m, r in got.items()},
                )
            )
    return out


def _curve(
    found: dict[tuple[object, ...], ResultRow],
    setting: tuple[str, int, str, str],
    budgets: Sequence[int],
    epsilon: float,
) -> Curve:
    chunker, size, mode, packer = setting
    measured = []
    for budget in budgets:
        names = [str(BudgetMetricSpec(m, budget)) for m in BUDGET_METRICS]
        measured.append([_value(found, (*setting, budget, n)) for n in names])
    points = [(budget, got[0].value) for budget, got in zip(budgets, measured, strict=True)]
    gains: list[float | None] = [None, *(m.per_1k_tokens for m in marginal_recall(points))]
    budget_points = tuple(
        BudgetPoint(
            budget=budget,
            answered=round(recall.value * recall.queries),
            n_queries=recall.queries,
            recall=recall.value,
            relevant_tokens=relevant.value,
            tokens_used=used.value,
            chunks=chunks.value,
            per_1k_tokens=gain,
        )
        for budget, (recall, relevant, used, chunks), gain in zip(
            budgets, measured, gains, strict=True
        )
    )
    label = curve_label(chunker, size, mode, packer)
    return Curve(label, chunker, size, mode, packer, budget_points, find_knee(points, epsilon))


def curves(rows: Sequence[ResultRow], grid: SweepGrid, epsilon: float) -> list[Curve]:
    """Build every configuration's budget curve and knee from ``rows``, in grid order."""
    found = _index(rows)
    return [
        _curve(found, (chunker, size, mode, packer), grid.budgets, epsilon)
        for chunker, size in grid.chunkings()
        for mode in grid.modes
        for packer in grid.packers
    ]


def recommend(all_curves: Sequence[Curve], epsilon: float) -> tuple[str, Knee]:
    """The overall knee (see :func:`.knee.overall_knee`): configuration label and knee."""
    return overall_knee(
        {c.label: [(p.budget, p.recall) for p in c.points] for c in all_curves}, epsilon
    )


@dataclass(frozen=True, slots=True)
class SweepReport:
    """Everything a sweep measured and recommends (``ctxselect sweep``).

    Attributes:
        dataset: The dataset's name; ``corpus``, ``queries_file``, ``labels_file``: inputs.
        label_kind: ``documents`` (qrels or lab labels) or ``spans``.
        level: ``doc`` or ``chunk``: what the ranking metrics judge.
        documents: Documents in the corpus; ``n_queries``: queries evaluated.
        excluded_no_relevant: Queries left out: no judged-relevant document or span.
        unknown_queries: Judged query ids missing from the queries file (not asked).
        unknown_docs: Judgments naming documents not in the corpus.
        spans_beyond_text: Span labels ending past their document's text.
        grid: The settings crossed; ``metrics``: ranking metrics measured.
        epsilon, turns, cache_factor: Knee tolerance and cost settings.
        sizes: Ranking metrics per (chunker, size, mode).
        curves: Budget curves with knees, per configuration.
        recommended_configuration, recommended: The overall knee and whose it is.
        costs: Session cost per budget of the recommended configuration at
            ``cache_factor``; ``uncached``: the same at c = 1.
        out: The results folder; ``files``: what was written there.
        computed, reused: Configurations measured now, and found in ``results.jsonl``.
        seconds: Wall time of the sweep.
    """

    dataset: str
    corpus: str
    queries_file: str
    labels_file: str
    label_kind: str
    level: str
    documents: int
    n_queries: int
    excluded_no_relevant: int
    unknown_queries: int
    unknown_docs: int
    spans_beyond_text: int
    grid: SweepGrid
    metrics: tuple[str, ...]
    epsilon: float
    turns: int
    cache_factor: float
    sizes: tuple[SizePoint, ...]
    curves: tuple[Curve, ...]
    recommended_configuration: str
    recommended: Knee
    costs: tuple[SessionCost, ...]
    uncached: tuple[SessionCost, ...]
    out: str
    files: tuple[str, ...]
    computed: int
    reused: int
    seconds: float

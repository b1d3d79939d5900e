"""Turn a sweep's result rows into curves, knees, the cost table and the lab-style tables.

A *curve* is one configuration's budget sweep (chunker, size, mode, packer: recall@Bt,
hit@Bt and friends per budget); a *size point* is one (chunker, size, mode) with its ranking
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


def curve_label(chunker: str, size: int, mode: str, packer: str, stop: str = "none") -> str:
    """Name a configuration: ``tokens-512/bm25/skip``; ``.../skip/stop-auto`` when it stops."""
    return f"{chunker}-{size}/{mode}/{packer}" + ("" if stop == "none" else f"/stop-{stop}")


@dataclass(frozen=True, slots=True)
class BudgetPoint:
    """One budget of a curve: the lab's budget row plus the budget metrics.

    ``per_1k_tokens`` is the knee metric's measured gain per 1,000 tokens since the
    budget before (None at the first budget).
    """

    budget: int
    answered: int
    n_queries: int
    recall: float
    hit: float
    relevant_tokens: float
    tokens_used: float
    chunks: float
    per_1k_tokens: float | None

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "budget (tok)",
        "answer in context",
        "hit@Bt",
        "recall@Bt",
        "relevant tokens",
        "tokens used",
        "avg chunks",
        "gain/1k tok",
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
            f"{self.hit:.4f}",
            f"{self.recall:.4f}",
            f"{self.relevant_tokens:.4f}",
            f"{self.tokens_used:.0f}",
            f"{self.chunks:.1f}",
            marginal,
        )

    def value(self, metric: str) -> float:
        """The knee metric's value here: ``recall`` or ``hit``."""
        return self.hit if metric == "hit" else self.recall


@dataclass(frozen=True, slots=True)
class Curve:
    """One configuration's budget sweep and its knee; ``stop`` is its stopping rule."""

    label: str
    chunker: str
    size: int
    mode: str
    packer: str
    points: tuple[BudgetPoint, ...]
    knee: Knee
    stop: str = "none"

    def recall_at(self, budget: int) -> float | None:
        """The knee metric at ``budget``, or None when that budget was not swept."""
        return next((p.value(self.knee.metric) for p in self.points if p.budget == budget), None)


@dataclass(frozen=True, slots=True)
class KneeRow:
    """A curve's knee as a table row, with the fitted gain of the step that confirms it."""

    label: str
    knee: Knee
    recall_at_4x: float | None

    def headers(self) -> tuple[str, ...]:
        """Column headers, named after the knee metric."""
        m = self.knee.metric
        return (
            "configuration",
            "knee (tok)",
            f"{m}@knee",
            "next (tok)",
            "gain/1k after",
            "δ",
            f"{m}@4×knee",
            f"best {m}",
            "best at (tok)",
        )

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed; ``*``/``<`` mark a knee at the upper/lower edge."""
        knee = self.knee
        at_4x = "-" if self.recall_at_4x is None else f"{self.recall_at_4x:.4f}"
        gain = "-" if knee.gain_after is None else f"{knee.gain_after:.4f}"
        return (
            self.label,
            f"{knee.budget}{'*' if knee.at_edge else ''}{'<' if knee.at_lower_edge else ''}",
            f"{knee.recall:.4f}",
            "-" if knee.next_budget is None else str(knee.next_budget),
            gain,
            f"{knee.delta:.4f}",
            at_4x,
            f"{knee.best_recall:.4f}",
            str(knee.best_budget),
        )


def knee_row(curve: Curve) -> KneeRow:
    """Build the knee row of ``curve``."""
    return KneeRow(curve.label, curve.knee, curve.recall_at(4 * curve.knee.budget))


def trade_off(curve: Curve, budget: int, instead_of: int) -> str:
    """Say in plain words what ``budget`` buys over ``instead_of`` on ``curve``.

    E.g. ``8,000 tokens instead of 4,000: +0.6 recall points for 2× the cost per turn``.

    Raises:
        InputError: A budget was not swept on ``curve``.
    """
    values = {p.budget: p.value(curve.knee.metric) for p in curve.points}
    if budget not in values or instead_of not in values:
        raise InputError(f"{curve.label} was not swept at {budget} and {instead_of} tokens")
    points = (values[budget] - values[instead_of]) * 100
    ratio = f"{budget / instead_of:.3g}×" if instead_of else "more than"
    return (
        f"{budget:,} tokens instead of {instead_of:,}: {points:+.1f} {curve.knee.metric} "
        f"points for {ratio} the cost per turn"
    )


def knee_trade_offs(curve: Curve) -> list[str]:
    """The trade-offs around ``curve``'s knee: the step into it and the step after it."""
    budgets = [p.budget for p in curve.points]
    at = budgets.index(curve.knee.budget)
    lines = []
    if at > 0:
        lines.append(trade_off(curve, budgets[at], budgets[at - 1]))
    if at + 1 < len(budgets):
        lines.append(trade_off(curve, budgets[at + 1], budgets[at]))
    if at + 1 < len(budgets) - 1:
        lines.append(trade_off(curve, budgets[-1], budgets[at]))
    return lines


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
    return {(r.chunker, r.size, r.mode, r.packer, r.budget, r.stop, r.metric): r for r in rows}


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
            at = (chunker, size, mode, None, None, "none")
            got = {m: _value(found, (*at, m)) for m in metrics}
            stats = {s: _value(found, (*at, s)) for s in CHUNK_STATS}
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


@dataclass(frozen=True, slots=True)
class KneeSettings:
    """How knees are found: metric (``recall``/``hit``), δ, and the tie tolerance ε."""

    metric: str
    delta: float
    epsilon: float


def _curve(
    found: dict[tuple[object, ...], ResultRow],
    setting: tuple[str, int, str, str, str],
    budgets: Sequence[int],
    knee: KneeSettings,
) -> Curve:
    chunker, size, mode, packer, stop = setting
    measured = []
    for budget in budgets:
        names = {m: str(BudgetMetricSpec(m, budget)) for m in BUDGET_METRICS}
        at = (chunker, size, mode, packer, budget, stop)
        measured.append({m: _value(found, (*at, n)) for m, n in names.items()})
    points = [(b, got[knee.metric].value) for b, got in zip(budgets, measured, strict=True)]
    gains: list[float | None] = [None, *(m.per_1k_tokens for m in marginal_recall(points))]
    budget_points = tuple(
        BudgetPoint(
            budget=budget,
            answered=round(got["hit"].value * got["hit"].queries),
            n_queries=got["hit"].queries,
            recall=got["recall"].value,
            hit=got["hit"].value,
            relevant_tokens=got["relevant-tokens"].value,
            tokens_used=got["tokens_used"].value,
            chunks=got["chunks"].value,
            per_1k_tokens=gain,
        )
        for budget, got, gain in zip(budgets, measured, gains, strict=True)
    )
    label = curve_label(chunker, size, mode, packer, stop)
    found_knee = find_knee(points, knee.delta, knee.metric)
    return Curve(label, chunker, size, mode, packer, budget_points, found_knee, stop)


def curves(rows: Sequence[ResultRow], grid: SweepGrid, knee: KneeSettings) -> list[Curve]:
    """Build every configuration's budget curve and knee from ``rows``, in grid order."""
    found = _index(rows)
    return [
        _curve(found, (chunker, size, mode, packer, stop), grid.budgets, knee)
        for chunker, size in grid.chunkings()
        for mode in grid.modes
        for stop in grid.stops
        for packer in grid.packers
    ]


def recommend(all_curves: Sequence[Curve], knee: KneeSettings) -> tuple[str, Knee]:
    """The overall knee (see :func:`.knee.overall_knee`): configuration label and knee.

    Only fill-to-budget curves (stop ``none``) take part when there are any: a budget
    recommends how much to fill; a stopping rule decides by itself how much it sends.
    """
    fill = [c for c in all_curves if c.stop == "none"] or list(all_curves)
    return overall_knee(
        {c.label: [(p.budget, p.value(knee.metric)) for p in c.points] for c in fill},
        knee.delta,
        knee.epsilon,
        knee.metric,
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
        empty_docs: Judgments naming documents the corpus holds without text (never
            chunked, so never retrieved; not in ``unknown_docs``), as ``eval`` counts them.
        spans_beyond_text: Span labels ending past their document's text.
        grid: The settings crossed; ``metrics``: ranking metrics measured.
        knee_metric: What knees are found on: ``recall`` or ``hit``.
        gain_per_1k: The least gain per 1,000 tokens sent once; ``delta``: δ, that
            gain times the session cost factor ``1 + (turns − 1) × cache_factor``.
        epsilon: Differences in the knee metric treated as noise (ties) across
            configurations. turns, cache_factor: the cost settings.
        sizes: Ranking metrics per (chunker, size, mode).
        curves: Budget curves with knees, per configuration.
        recommended_configuration, recommended: The overall knee and whose it is.
        trade_offs: The recommendation's trade-offs in plain words.
        costs: Session cost per budget of the recommended configuration at
            ``cache_factor``; ``uncached``: the same at c = 1.
        out: The results folder; ``files``: what was written there.
        computed, reused: Configurations measured now, and found in ``results.jsonl``.
        seconds: Wall time of the sweep.
        stop_calibration: Which P(relevant) the stop rules other than ``none`` used
            (``out of sample, 5 folds`` or ``uncalibrated rule (...)``; "" with none).
        unmatched_labels: Lab labels matching no document, in file order (their queries
            are among ``excluded_no_relevant``).
        excluded_query_ids, unknown_query_ids, unknown_doc_ids, empty_doc_ids: The ids
            behind ``excluded_no_relevant``, ``unknown_queries``, ``unknown_docs`` and
            ``empty_docs`` (distinct, sorted), which the report names.
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
    knee_metric: str
    gain_per_1k: float
    delta: float
    epsilon: float
    turns: int
    cache_factor: float
    sizes: tuple[SizePoint, ...]
    curves: tuple[Curve, ...]
    recommended_configuration: str
    recommended: Knee
    trade_offs: tuple[str, ...]
    costs: tuple[SessionCost, ...]
    uncached: tuple[SessionCost, ...]
    out: str
    files: tuple[str, ...]
    computed: int
    reused: int
    seconds: float
    stop_calibration: str = ""
    unmatched_labels: tuple[str, ...] = ()
    empty_docs: int = 0
    excluded_query_ids: tuple[str, ...] = ()
    unknown_query_ids: tuple[str, ...] = ()
    unknown_doc_ids: tuple[str, ...] = ()
    empty_doc_ids: tuple[str, ...] = ()

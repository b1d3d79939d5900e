"""PNG plots of a sweep: budget curves (one line per configuration), recall against mean
tokens used (fill-to-budget and each stop rule) and chunk-size curves.

matplotlib is an extra (``pip install 'ctxselect[plot]'``), imported on first use. The
figures are drawn with ``matplotlib.figure.Figure`` directly, not pyplot, so no GUI
backend or global state is involved.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from ctxselect._require import require
from ctxselect.eval.summary import Curve, SizePoint

RECALL_PLOT = "recall_vs_budget.png"
RELEVANT_TOKENS_PLOT = "relevant_tokens_vs_budget.png"
SIZE_PLOT = "quality_vs_chunk_size.png"
TOKENS_USED_PLOT = "recall_vs_tokens_used.png"
_MARKERS = "osD^vP*Xhp<>"
_LINTHRESH = 100  # tokens: linear below, logarithmic above


def _figure(width: float = 7.5, height: float = 4.5) -> Any:
    figure_module = require("matplotlib.figure", extra="plot", feature="sweep plots")
    return figure_module.Figure(figsize=(width, height), dpi=110, layout="constrained")


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    # no timestamp or version in the metadata: the same sweep draws the same bytes
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def budget_plot(curves: Sequence[Curve], metric: str, dataset: str) -> bytes:
    """Plot ``recall``, ``hit`` or ``relevant_tokens`` against budget, one line each.

    Knees are marked with a ring on the plot of the knee metric.
    """
    figure = _figure()
    axes = figure.add_subplot()
    for i, curve in enumerate(curves):
        budgets = [p.budget for p in curve.points]
        values = [getattr(p, metric) for p in curve.points]
        (line,) = axes.plot(
            budgets,
            values,
            marker=_MARKERS[i % len(_MARKERS)],
            markersize=4,
            linewidth=1.2,
            label=curve.label,
        )
        if metric == curve.knee.metric:
            axes.plot(
                [curve.knee.budget],
                [curve.knee.recall],
                marker="o",
                markersize=11,
                markerfacecolor="none",
                color=line.get_color(),
            )
    axes.set_xscale("log", base=2)
    budgets = sorted({p.budget for c in curves for p in c.points})
    axes.set_xticks(budgets, [f"{b:,}" for b in budgets])
    axes.set_xlabel("budget (tokens, framing included)")
    name = f"{metric}@Bt" if metric in ("recall", "hit") else "share of relevant tokens"
    axes.set_ylabel(name)
    title = f"{dataset}: {name} against budget"
    ringed = bool(curves) and metric == curves[0].knee.metric
    axes.set_title(title + (" (rings: knees)" if ringed else ""))
    axes.set_ylim(0, 1.02)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small", ncols=2 if len(curves) > 8 else 1)
    return _png(figure)


def tokens_used_plot(curves: Sequence[Curve], metric: str, dataset: str) -> bytes:
    """Plot ``metric`` (``recall`` or ``hit``) against mean tokens used, one line each.

    Fill-to-budget curves (stop ``none``) are solid, stopping curves dashed: at the same
    mean tokens sent, the higher line selects better.
    """
    return _png(tokens_used_figure(curves, metric, dataset))


def tokens_used_figure(curves: Sequence[Curve], metric: str, dataset: str) -> Any:
    """The matplotlib ``Figure`` of :func:`tokens_used_plot`."""
    figure = _figure()
    axes = figure.add_subplot()
    for i, curve in enumerate(curves):
        points = sorted(curve.points, key=lambda p: p.tokens_used)
        axes.plot(
            [p.tokens_used for p in points],
            [p.value(metric) for p in points],
            marker=_MARKERS[i % len(_MARKERS)],
            markersize=4,
            linewidth=1.2,
            linestyle="-" if curve.stop == "none" else "--",
            label=curve.label if curve.stop != "none" else f"{curve.label} (fill)",
        )
    # symlog, not log: a stop rule can send 0 tokens; the ticks are set by hand because
    # matplotlib labels none inside the linear part (0 to 100), where stopping curves sit
    axes.set_xscale("symlog", linthresh=_LINTHRESH)
    _token_ticks(axes, [p.tokens_used for c in curves for p in c.points])
    axes.set_xlabel("mean tokens used per query (framing included)")
    axes.set_ylabel(f"{metric}@Bt")
    axes.set_title(f"{dataset}: {metric}@Bt against mean tokens used (dashed: stopping)")
    axes.set_ylim(0, 1.02)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small", ncols=2 if len(curves) > 8 else 1)
    return figure


def _token_ticks(axes: Any, values: Sequence[float]) -> None:
    """Label a symlog token axis at round numbers that read true (25, 50, 100, 250, ...).

    Only labelled ticks are drawn (no minor ticks), each at its true position.
    """
    ticker = require("matplotlib.ticker", extra="plot", feature="sweep plots")
    high = max([*values, 1.0])
    steps = [0, 25, 50] + [m * 10**e for e in range(2, 9) for m in (1, 2.5, 5)]
    ticks = [t for t in steps if t < high]
    ticks.append(next(t for t in steps if t >= high))  # the first at or past the data
    axes.set_xticks(ticks, [f"{int(t):,}" for t in ticks])
    axes.xaxis.set_minor_locator(ticker.NullLocator())


def size_plot(points: Sequence[SizePoint], metrics: Sequence[str], dataset: str) -> bytes:
    """Plot ranking metrics against chunk size, one line per (chunker, mode).

    The x axis is the mean chunk length in tokens, the one unit every chunker shares
    (paragraph sizes are characters); each point is labelled with its configured size.
    """
    return _png(size_figure(points, metrics, dataset))


def size_figure(points: Sequence[SizePoint], metrics: Sequence[str], dataset: str) -> Any:
    """The matplotlib ``Figure`` of :func:`size_plot`."""
    figure = _figure(4.2 * max(1, len(metrics)), 4.2)
    panels = figure.subplots(1, max(1, len(metrics)), squeeze=False)[0]
    lines: dict[tuple[str, str], list[SizePoint]] = {}
    for point in points:
        lines.setdefault((point.chunker, point.mode), []).append(point)
    for axes, metric in zip(panels, metrics, strict=False):
        for i, ((chunker, mode), group) in enumerate(lines.items()):
            group = sorted(group, key=lambda p: p.mean_chunk_tokens)
            xs = [p.mean_chunk_tokens for p in group]
            ys = [p.metrics[metric] for p in group]
            axes.plot(xs, ys, marker=_MARKERS[i % len(_MARKERS)], label=f"{chunker}/{mode}")
            labels: dict[tuple[float, float], list[str]] = {}
            for p, x, y in zip(group, xs, ys, strict=True):
                labels.setdefault((x, y), []).append(str(p.size))  # same chunks, one label
            for (x, y), sizes in labels.items():
                axes.annotate(
                    ", ".join(sizes), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points"
                )
        axes.set_xscale("log", base=2)
        _power_of_two_ticks(axes, [p.mean_chunk_tokens for p in points])
        axes.set_xlabel("mean chunk length (tokens)")
        axes.set_ylabel("top-1 correct (hit@1)" if metric == "hit@1" else metric)
        axes.set_title(f"{dataset}: {metric} against chunk size")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    # said once for the figure: as each panel's x label it was wider than the panel
    figure.supxlabel("point labels: configured chunk size", fontsize="small")
    return figure


def _power_of_two_ticks(axes: Any, values: Sequence[float]) -> None:
    """Label a log2 axis with plain numbers (64, 128, ...) rather than 2^6, 2^7."""
    positive = [v for v in values if v > 0] or [1.0]
    low = math.floor(math.log2(min(positive)))
    high = math.ceil(math.log2(max(positive)))
    ticks = [2.0**i for i in range(low, max(high, low + 1) + 1)]
    axes.set_xticks(ticks, [f"{t:g}" for t in ticks])


def sweep_plots(
    curves: Sequence[Curve], points: Sequence[SizePoint], metrics: Sequence[str], dataset: str
) -> dict[str, bytes]:
    """Draw every plot of a sweep: file name -> PNG bytes.

    The size plot shows ``hit@1`` and ``ndcg@10`` when measured, else the first two
    ranking metrics.

    Raises:
        MissingExtraError: matplotlib is not installed.
    """
    preferred = [m for m in ("hit@1", "ndcg@10") if m in metrics] or list(metrics[:2])
    metric = curves[0].knee.metric if curves else "recall"
    return {
        RECALL_PLOT: budget_plot(curves, metric, dataset),
        TOKENS_USED_PLOT: tokens_used_plot(curves, metric, dataset),
        RELEVANT_TOKENS_PLOT: budget_plot(curves, "relevant_tokens", dataset),
        SIZE_PLOT: size_plot(points, preferred, dataset),
    }

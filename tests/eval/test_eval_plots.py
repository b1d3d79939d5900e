"""Sweep plots: axes whose tick labels read true, and labels that fit in the figure."""

from __future__ import annotations

import pytest

from ctxselect.eval import find_knee
from ctxselect.eval.plots import size_figure, sweep_plots, tokens_used_figure
from ctxselect.eval.summary import BudgetPoint, Curve, SizePoint

pytest.importorskip("matplotlib")  # the plot extra; make test installs it


def curve(label: str, used: list[float], recall: list[float], stop: str = "none") -> Curve:
    budgets = [250, 500, 1000, 2000, 4000, 8000][: len(used)]
    points = tuple(
        BudgetPoint(b, 0, 10, r, r, r, u, 1.0, None)
        for b, u, r in zip(budgets, used, recall, strict=True)
    )
    knee = find_knee([(p.budget, p.recall) for p in points], 0.038)
    return Curve(label, "tokens", 512, "bm25", "skip", points, knee, stop)


FILL_USED = [210, 454, 949, 1948, 3947, 7956]  # SciFact, tokens 512, bm25
CURVES = [
    curve("tokens-512/bm25/skip", FILL_USED, [0.19, 0.54, 0.71, 0.76, 0.83, 0.86]),
    curve("tokens-512/bm25/skip/stop-auto", [58, 230, 304], [0.14, 0.45, 0.51], "auto"),
]
SIZES = [
    SizePoint("tokens", size, "bm25", 100, 10, tokens, 3 * tokens, {"hit@1": 0.5, "ndcg@10": v})
    for size, tokens, v in [(256, 220.0, 0.682), (512, 283.0, 0.685)]
]


def _drawn(figure):
    """Draw ``figure`` on an Agg canvas (the one savefig uses for PNG) and return it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure).draw()
    return figure


def _inside(figure, artist) -> bool:
    box = artist.get_window_extent(figure.canvas.get_renderer())
    whole = figure.bbox
    return box.x0 >= whole.x0 - 0.5 and box.x1 <= whole.x1 + 0.5 and box.y0 >= whole.y0 - 0.5


def test_tokens_used_ticks_are_labelled_below_100_at_their_true_positions():
    figure = _drawn(tokens_used_figure(CURVES, "recall", "scifact"))
    axes = figure.axes[0]
    labelled = {t.get_text(): t.get_position()[0] for t in axes.get_xticklabels()}
    assert {"25", "50", "100", "1,000"} <= set(labelled)  # the 58-token point has ticks
    for text, position in labelled.items():
        assert position == pytest.approx(float(text.replace(",", "")))
    assert labelled["10,000"] >= 7956  # the largest point is framed by a tick
    assert len(axes.xaxis.get_minorticklocs()) == 0  # no unlabelled ticks to misread


@pytest.mark.parametrize("sizes", [SIZES, SIZES[1:]], ids=["two sizes", "one size"])
def test_size_plot_labels_fit_inside_the_figure(sizes):
    figure = _drawn(size_figure(sizes, ["hit@1", "ndcg@10"], "scifact"))
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        label = axes.xaxis.label
        assert _inside(figure, label), label.get_text()
        # no wider than its panel, whatever the y tick labels take from the panel's width
        assert label.get_window_extent(renderer).width <= axes.bbox.width, label.get_text()
        assert all(_inside(figure, t) for t in axes.get_xticklabels() if t.get_text())
    assert figure.get_supxlabel() == "point labels: configured chunk size"


def test_sweep_plots_draw_every_png():
    pngs = sweep_plots(CURVES, SIZES, ["hit@1", "ndcg@10"], "scifact")
    assert all(png.startswith(b"\x89PNG") for png in pngs.values()) and len(pngs) == 4

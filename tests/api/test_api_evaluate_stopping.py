"""Stopping measured in eval and sweep: mean tokens used, calibration out of sample."""

from __future__ import annotations

import pytest

from _support.stopping_corpus import TOPICS, make_labeled
from ctxselect.api import evaluate as experiments
from ctxselect.api import sweep as sweeps
from ctxselect.budget import calibration
from ctxselect.errors import ConfigError
from ctxselect.eval import read_results


@pytest.fixture(scope="module")
def labeled(tmp_path_factory):
    return make_labeled(tmp_path_factory.mktemp("stopping"))


def evaluate(data, **options):
    return experiments.evaluate_corpus(
        data["corpus"],
        data["queries"],
        data["qrels"],
        index=data["root"] / "index",
        metrics=("ndcg@10",),
        budgets=(1000, 2000),
        **options,
    )


def test_eval_stop_auto_uses_fewer_tokens_than_fill_and_says_how_it_calibrated(labeled):
    fill = evaluate(labeled)
    stop = evaluate(labeled, stop="auto")
    assert (fill.stop, fill.calibration) == ("none", "")
    assert (stop.stop, stop.calibration) == ("auto", "out of sample, 5 folds")
    for budget in (1000, 2000):
        used = f"tokens_used@{budget}t"
        assert stop.metrics[used] < 0.6 * fill.metrics[used]
        assert stop.metrics[f"recall@{budget}t"] > 0
    assert stop.metrics["ndcg@10"] == fill.metrics["ndcg@10"]  # the ranking is the same


def test_out_of_sample_fit_never_sees_the_query_it_scores(labeled, monkeypatch):
    """Spy on every fit and every prediction: a query's scores never come from a model
    whose training rankings held that query."""
    trained: dict[int, set[tuple[float, ...]]] = {}
    predicted: list[tuple[int, tuple[float, ...]]] = []
    real_fit, real_predict = calibration.fit, calibration.Model.predict

    alive = []  # ids are only unique among live objects: keep every model alive

    def fit(rankings, l2=calibration.L2):
        model = real_fit(rankings, l2)
        alive.append(model)
        trained[id(model)] = {tuple(scores[:3]) for scores, _ in rankings}
        return model

    def predict(self, scores):
        predicted.append((id(self), tuple(scores[:3])))
        return real_predict(self, scores)

    monkeypatch.setattr(calibration, "fit", fit)
    monkeypatch.setattr(calibration.Model, "predict", predict)
    evaluate(labeled, stop="auto")
    # 5 folds, and inside each the 4 others again to choose its stop threshold
    assert len(trained) == 5 + 5 * 4 and len(predicted) >= TOPICS
    assert all(scores not in trained[model] for model, scores in predicted)
    every = set().union(*trained.values())
    assert all(scores in every for _, scores in predicted)  # each one was fitted on elsewhere


def test_eval_ignores_the_stored_calibration_unless_asked(labeled, monkeypatch):
    n = len(calibration.FEATURES)
    model = calibration.Model((5.0,) + (0.0,) * n, (0.0,) * n, (1.0,) * n)
    stored = calibration.Calibration("bm25", model, 1e-4, 0, 0, 0, 0, 99, 0, 0, 5, 10, 0.1, 1, 1e3)
    monkeypatch.setattr(experiments.Index, "calibration", lambda self, mode=None: stored)
    own = evaluate(labeled, stop="auto")
    used = evaluate(labeled, stop="auto", stored_calibration=True)
    assert own.calibration == "out of sample, 5 folds"
    assert used.calibration == "stored in the index"
    fill = evaluate(labeled)
    # P = sigmoid(5) everywhere, t = 1e-4: every chunk is worth it, the stored model fills
    assert used.metrics["tokens_used@2000t"] == fill.metrics["tokens_used@2000t"]
    assert own.metrics["tokens_used@2000t"] < fill.metrics["tokens_used@2000t"]


def test_too_few_labeled_queries_fall_back_to_the_uncalibrated_rule(labeled, tmp_path):
    qrels = tmp_path / "few.tsv"
    qrels.write_text("".join(f"q{i}\tt{i:02d}.md\t1\n" for i in range(4)), encoding="utf-8")
    data = {**labeled, "qrels": qrels}
    result = evaluate(data, stop="auto")
    assert result.calibration.startswith("uncalibrated rule (4 labeled queries")
    with pytest.raises(ConfigError, match="needs a calibrated P") as refused:
        evaluate(data, stop=0.3)
    assert "eval --stop, sweep --stops" in str(refused.value), "each command's own flag"


def sweep(data, out, stops):
    grid = sweeps.sweep_grid(sizes=["64"], budgets=[250, 1000], stops=stops)
    return sweeps.run_sweep(
        data["corpus"], data["queries"], qrels=data["qrels"], grid=grid, out=out, name="toy"
    )


def test_sweep_with_stops_writes_rows_of_each_and_plots_tokens_used(labeled, tmp_path):
    out = tmp_path / "out"
    fill_only = sweep(labeled, out, "none")
    assert [c.label for c in fill_only.curves] == ["tokens-64/bm25/skip"]
    report = sweep(labeled, out, "none,auto")
    assert (report.computed, report.reused) == (2, 3)  # only the auto budgets are new
    rows = [r for r in read_results(out / "results.jsonl") if r.budget is not None]
    assert {r.stop for r in rows} == {"none", "auto"}
    by = {(r.stop, r.metric): r.value for r in rows}
    assert by[("auto", "tokens_used@1000t")] < by[("none", "tokens_used@1000t")]
    labels = [c.label for c in report.curves]
    assert labels == ["tokens-64/bm25/skip", "tokens-64/bm25/skip/stop-auto"]
    assert report.recommended_configuration == "tokens-64/bm25/skip"
    assert report.stop_calibration == "out of sample, 5 folds"
    assert (out / "recall_vs_tokens_used.png").read_bytes().startswith(b"\x89PNG")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "against the mean tokens a selection used" in page and "stop-auto" in page
    tables = (out / "tables.txt").read_text(encoding="utf-8")
    assert "calibration out of sample, 5 folds" in tables


def test_sweep_stops_are_checked_and_canonical():
    assert sweeps.sweep_grid(stops="none, AUTO,0.30").stops == ("none", "auto", "0.3")
    with pytest.raises(ConfigError, match="unknown stop rule"):
        sweeps.sweep_grid(stops="none,later")
    with pytest.raises(ConfigError, match="outside"):
        sweeps.sweep_grid(stops="1.5")

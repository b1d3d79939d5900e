"""`ctxselect eval --stop` and `ctxselect sweep --stops`: tokens used, calibration said."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails, run

from _support.stopping_corpus import make_labeled
from ctxselect.interfaces.cli import commands, experiments  # noqa: F401  (register commands)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_labeled(tmp_path_factory.mktemp("cli-stop"))


def eval_args(data, *more):
    return (
        "eval", "--corpus", str(data["corpus"]), "--queries", str(data["queries"]),
        "--qrels", str(data["qrels"]), "--index", str(data["root"] / "index"),
        "--budgets", "1000,2000", *more,
    )  # fmt: skip


def test_eval_stop_auto_prints_its_calibration_and_fewer_tokens(data):
    text = run(*eval_args(data, "--stop", "auto")).output
    assert "stop auto, calibration out of sample, 5 folds" in text
    fill = json.loads(run(*eval_args(data, "--json")).output)
    stop = json.loads(run(*eval_args(data, "--stop", "auto", "--json")).output)
    assert (fill["stop"], stop["stop"], stop["calibration"]) == (
        "none",
        "auto",
        "out of sample, 5 folds",
    )
    assert stop["metrics"]["tokens_used@1000t"] < fill["metrics"]["tokens_used@1000t"]
    stored = json.loads(
        run(*eval_args(data, "--stop", "auto", "--stored-calibration", "--json")).output
    )
    assert stored["calibration"] == "uncalibrated rule (the index has no calibration)"


def test_eval_bad_stop_is_a_usage_error_listing_the_valid_values(data):
    message = fails(*eval_args(data, "--stop", "later"), code=2)
    assert "auto, none or a P(relevant) threshold" in message


def test_sweep_stops_measures_each_rule(data, tmp_path):
    out = tmp_path / "out"
    text = run(
        "sweep", "--corpus", str(data["corpus"]), "--queries", str(data["queries"]),
        "--qrels", str(data["qrels"]), "--sizes", "64", "--budgets", "250,1000",
        "--stops", "none,auto", "--out", str(out),
    ).output  # fmt: skip
    assert "tokens-64/bm25/skip/stop-auto" in text and "out of sample, 5 folds" in text
    assert (out / "recall_vs_tokens_used.png").exists()

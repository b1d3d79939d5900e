"""eval, sweep and tune on a user's own labels: inputs that are plausible but wrong."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails, run

from _support.stopping_corpus import TOPICS, calibrated_folder, make_labeled
from ctxselect import api
from ctxselect.interfaces.cli import commands, experiments, tune  # noqa: F401


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_labeled(tmp_path_factory.mktemp("user-data"))


def _foreign_qrels(path):
    """Qrels for the same query ids that judge documents of another corpus."""
    path.write_text("".join(f"q{i}\tother/{i:02d}.md\t1\n" for i in range(TOPICS)))
    return str(path)


def _manifest(folder) -> dict:
    with api.open_index(folder) as idx:
        return {"calibration": idx.settings.calibration, "fusion": idx.settings.fusion}


def test_tune_refuses_labels_of_another_corpus_and_keeps_what_is_stored(tmp_path):
    folder = calibrated_folder(tmp_path)  # dense vectors (hash), calibrated on its labels
    before = _manifest(folder)
    qrels = _foreign_qrels(tmp_path / "foreign.tsv")
    queries = str(tmp_path / "queries.jsonl")
    message = fails("tune", "--index", str(folder), "--queries", queries, "--qrels", qrels)
    assert "judge relevant only documents the index lacks (e.g. 'other/00.md'" in message
    assert "pass the labels of the corpus this index was built from" in message
    assert _manifest(folder) == before  # neither fusion nor P(relevant) was overwritten


def test_calibration_only_tune_refuses_labels_of_another_corpus(data, tmp_path):
    folder = str(tmp_path / "ix")
    run("index", str(data["corpus"]), "--index", folder)  # no dense vectors
    qrels = _foreign_qrels(tmp_path / "foreign.tsv")
    message = fails("tune", "--index", folder, "--queries", str(data["queries"]), "--qrels", qrels)
    assert message.startswith("error: calibration needs at least 10 labeled queries")
    assert "found 0: 14 labeled queries judge relevant only documents the index lacks" in message
    assert _manifest(folder)["calibration"] == {}


def _eval(data, *more):
    return (
        "eval", "--corpus", str(data["corpus"]), "--queries", str(data["queries"]),
        "--qrels", str(data["qrels"]), "--index", str(data["root"] / "index"), *more,
    )  # fmt: skip


def test_eval_stored_threshold_on_an_uncalibrated_index_is_refused(data):
    message = fails(*_eval(data, "--budgets", "1000", "--stop", "0.3", "--stored-calibration"))
    assert "stores no calibration for it: run `ctxselect tune" in message
    assert "or drop --stored-calibration" in message


@pytest.mark.parametrize(
    ("flags", "named"), [(("--stop", "auto"), "stop=auto"), (("--stored-calibration",), "stored")]
)
def test_eval_stop_flags_without_budgets_are_refused(data, flags, named):
    message = fails(*_eval(data, *flags))
    assert named in message and "no budget is given" in message and "--budgets" in message


def test_stored_calibration_with_the_stop_rule_none_is_refused(data):
    # accepted, it measured budgets filled to the brim, the calibration never read
    message = fails(*_eval(data, "--budgets", "1000", "--stored-calibration"))
    assert "the stop rule is none (fill the budget), so it would change nothing" in message


def test_eval_reads_tsv_queries_as_it_reads_jsonl(data, tmp_path):
    tsv = tmp_path / "queries.tsv"
    lines = [json.loads(line) for line in data["queries"].read_text().splitlines()]
    tsv.write_text("query-id\ttext\n" + "".join(f"{q['_id']}\t{q['text']}\n" for q in lines))
    jsonl = json.loads(run(*_eval(data, "--json")).output)
    args = [*_eval(data, "--json")]
    args[args.index("--queries") + 1] = str(tsv)
    from_tsv = json.loads(run(*args).output)
    assert from_tsv["n_queries"] == jsonl["n_queries"] == TOPICS
    assert from_tsv["metrics"] == jsonl["metrics"]


def test_tsv_queries_with_a_bad_line_name_file_line_and_form(data, tmp_path):
    tsv = tmp_path / "queries.tsv"
    tsv.write_text("q0\ttopic0word\nq1\n")
    message = fails(*_eval(data)[:3], "--queries", str(tsv), "--qrels", str(data["qrels"]))
    assert message.strip().endswith(
        "queries.tsv:2: expected a TSV line '<query id><TAB><query text>', got 'q1'"
    )


def test_sweep_recommends_no_budget_smaller_than_every_chunk(data, tmp_path):
    corpus, out = tmp_path / "long", tmp_path / "out"
    corpus.mkdir()  # each document one chunk of about 300 tokens: no budget swept holds one
    for i in range(TOPICS):
        (corpus / f"t{i:02d}.md").write_text(f"topic{i}word marker{i} context budget " * 60)
    args = (
        "sweep", "--corpus", str(corpus), "--queries", str(data["queries"]),
        "--qrels", str(data["qrels"]), "--sizes", "512", "--budgets", "100,150",
        "--out", str(out), "--no-plots",
    )  # fmt: skip
    message = fails(*args, "--recommend")
    assert message.startswith("error: no budget to recommend: at every budget swept (100 to 150")
    assert "no selection holds any chunk" in message and "sweep larger budgets" in message
    assert (out / "results.jsonl").stat().st_size > 0  # what was measured is kept
    tables = run(*args).output
    assert "No budget to recommend" in tables and "Recommended:" not in tables


def test_sweep_stop_note_says_what_few_labels_and_no_fill_curve_mean(data, tmp_path):
    qrels = tmp_path / "few.tsv"
    qrels.write_text("".join(f"q{i}\tt{i:02d}.md\t1\n" for i in range(4)))
    text = run(
        "sweep", "--corpus", str(data["corpus"]), "--queries", str(data["queries"]),
        "--qrels", str(qrels), "--sizes", "64", "--budgets", "250,1000", "--stops", "auto",
        "--out", str(tmp_path / "out"), "--no-plots",
    ).output  # fmt: skip
    note = next(line for line in text.splitlines() if line.startswith("Stop rules auto"))
    assert "(4 labeled queries, fewer than 10 to calibrate)" in note
    assert "no P(relevant) model: auto cuts at the largest score gap" in note
    assert "fitted on the other folds" not in note
    assert "no fill-to-budget curve was swept (add none to --stops)" in note


def test_sweep_of_one_budget_says_there_is_no_trade_off(data, tmp_path):
    text = run(
        "sweep", "--corpus", str(data["corpus"]), "--queries", str(data["queries"]),
        "--qrels", str(data["qrels"]), "--sizes", "64", "--budgets", "1000",
        "--out", str(tmp_path / "out"), "--no-plots",
    ).output  # fmt: skip
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Trade-off ("))
    assert lines[at + 1] == "  one budget swept: nothing to weigh"
    assert "at the edge: sweep larger budgets" in text and "at the lower edge" in text


def test_run_out_into_a_missing_folder_makes_it_and_a_folder_is_refused_up_front(tmp_path):
    """A long evaluation must not end unable to save its run: the folder is made first,
    and a path that is a folder is refused before anything is indexed."""
    from click.testing import CliRunner

    from ctxselect.interfaces.cli.main import cli

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("apples grow in the orchard", encoding="utf-8")
    (corpus / "b.md").write_text("boats sail on the bay", encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "apples", "label": "a.md"}\n', encoding="utf-8")
    run_out = tmp_path / "runs" / "deep" / "x.trec"
    per_query = tmp_path / "pq" / "x.jsonl"
    args = ["eval", "--corpus", str(corpus), "--queries", str(queries)]
    args += ["--index", str(tmp_path / "ix")]
    done = CliRunner().invoke(
        cli, [*args, "--run-out", str(run_out), "--per-query", str(per_query)]
    )
    assert done.exit_code == 0, done.output
    assert " Q0 a.md 1 " in run_out.read_text(encoding="utf-8")  # the TREC run, ranked
    assert per_query.read_text(encoding="utf-8").count("\n") == 1  # one query, one line
    refused = CliRunner().invoke(cli, [*args, "--run-out", str(tmp_path / "runs")])
    assert refused.exit_code == 1
    assert f"--run-out {tmp_path / 'runs'} is a folder: name a file to write" in refused.output
    folder = CliRunner().invoke(cli, [*args, "--per-query", str(tmp_path / "runs")])
    assert f"e.g. {tmp_path / 'runs' / 'per_query.jsonl'}" in folder.output  # not run.trec

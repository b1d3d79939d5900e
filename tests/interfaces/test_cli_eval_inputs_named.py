"""eval, sweep, lab and tune on inputs a user gets wrong: budgets select refuses, labels
naming what the queries file or the index lacks, chunk flags with an existing --index."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails, run

from ctxselect import api
from ctxselect.api import evaluate
from ctxselect.api import sweep as sweeps
from ctxselect.errors import ConfigError
from ctxselect.eval import SweepGrid
from ctxselect.interfaces.cli import commands, experiments, tune  # noqa: F401

BELOW = "budget 50 is below the minimum of 100 tokens: ask for at least 100"
TOPICS = (
    "budget", "ranking", "cooking", "cache", "retries", "install",
    "search", "garden", "weather", "music", "travel", "chess",
)  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Twelve documents, queries for them, and qrels that also judge 6 queries the queries
    file lacks and 7 documents the corpus lacks (one of them twice)."""
    root = tmp_path_factory.mktemp("named")
    corpus = root / "corpus"
    corpus.mkdir()
    for topic in TOPICS:
        (corpus / f"{topic}.md").write_text(f"# {topic}\n\nAll about {topic} and {topic}s.\n")
    queries = root / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": t, "text": t}) + "\n" for t in TOPICS))
    judged = [f"{t}\t{t}.md\t1\n" for t in TOPICS]
    judged += [f"lost{i}\tbudget.md\t1\n" for i in range(6)]
    judged += [f"budget\tghost{i}.md\t1\n" for i in range(7)] + ["cache\tghost0.md\t1\n"]
    qrels = root / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "".join(judged))
    return {"root": root, "corpus": str(corpus), "queries": str(queries), "qrels": str(qrels)}


def _labeled(data) -> list[str]:
    return ["--corpus", data["corpus"], "--queries", data["queries"], "--qrels", data["qrels"]]


# --- budgets below select's minimum -------------------------------------------------------


def test_select_refuses_the_budget_in_these_words(data):
    folder = str(data["root"] / "ix-select")
    run("index", data["corpus"], "--index", folder)
    assert BELOW in fails("select", "x", "--index", folder, "--budget", "50", code=2)


@pytest.mark.parametrize("command", ["eval", "sweep", "lab"])
def test_budgets_below_select_minimum_are_usage_errors(data, tmp_path, command):
    out = ["--out", str(tmp_path / "out")] if command == "sweep" else []
    if command == "lab":
        args = ["lab", "--corpus", data["corpus"], "--queries", data["queries"]]
    else:
        args = [command, *_labeled(data), *out]
    message = fails(*args, "--budgets", "500,50", code=2)
    assert BELOW in message and "'500,50'" in message
    assert "--budgets" in fails(*args, "--budgets", "0", code=2)
    assert not (tmp_path / "out").exists()


def test_eval_budget_metric_below_the_minimum_names_the_metric(data, tmp_path):
    folder = tmp_path / "ix"
    message = fails("eval", *_labeled(data), "--index", str(folder), "--metrics", "recall@50t")
    assert message == f"error: metric recall@50t: {BELOW}\n"
    assert not folder.exists()  # refused before anything was indexed


def test_sweep_grid_file_budget_below_the_minimum_names_the_file(data, tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("budgets = [50, 500]\n")
    message = fails("sweep", *_labeled(data), "--grid", str(grid), "--out", str(tmp_path / "o"))
    assert message == f"error: grid file {grid}: budgets: {BELOW}\n"
    assert not (tmp_path / "o").exists()


def test_the_python_api_refuses_them_too(data, tmp_path):
    files = (data["corpus"], data["queries"], data["qrels"])
    with pytest.raises(ConfigError, match=BELOW):
        evaluate.evaluate_corpus(*files, index=tmp_path / "ix", budgets=[50])
    with pytest.raises(ConfigError, match="budget 0 is below"):
        sweeps.run_sweep(
            *files[:2], qrels=files[2], grid=SweepGrid(budgets=(0, 500)), out=tmp_path / "o"
        )
    with pytest.raises(ConfigError, match=BELOW):
        evaluate.run_lab(data["corpus"], data["queries"], budgets=(50,))
    assert not (tmp_path / "ix").exists() and not (tmp_path / "o").exists()


# --- naming what the labels judge that the queries file or the corpus lacks ---------------


def test_eval_names_the_first_unknown_queries_and_documents(data, tmp_path):
    folder = str(tmp_path / "ix")
    lines = run("eval", *_labeled(data), "--index", folder).output.splitlines()
    assert (
        "judged queries missing from the queries file: 6 (lost0, lost1, lost2, lost3, lost4, ...)"
        in lines
    )
    assert (
        "judged documents not in the corpus: 8 judgments of 7 documents "
        "(ghost0.md, ghost1.md, ghost2.md, ghost3.md, ghost4.md, ...)"
    ) in lines
    got = json.loads(run("eval", *_labeled(data), "--index", folder, "--json").stdout)
    assert (got["unknown_queries_in_qrels"], got["unknown_docs_in_qrels"]) == (6, 8)
    assert got["unknown_query_ids"] == [f"lost{i}" for i in range(6)]
    assert got["unknown_doc_ids"] == [f"ghost{i}.md" for i in range(7)]


@pytest.mark.parametrize("embedder", [[], ["--embedder", "hash"]], ids=["keyword", "dense"])
def test_tune_names_unknown_queries_and_documents_as_eval_does(data, tmp_path, embedder):
    folder = str(tmp_path / "ix")
    run("index", data["corpus"], "--index", folder, *embedder)
    args = ["tune", "--index", folder, "--queries", data["queries"], "--qrels", data["qrels"]]
    text = run(*args, "--folds", "2", "--dry-run").output.splitlines()
    assert (
        "judged queries missing from the queries file: 6 (lost0, lost1, lost2, lost3, lost4, ...)"
        in text
    )
    assert any(
        line.startswith("judged documents not in the index: 8 judgments of 7 documents (ghost0")
        for line in text
    )
    got = json.loads(run(*args, "--folds", "2", "--dry-run", "--json").stdout)
    assert (got["unknown_queries_in_qrels"], got["unknown_docs_in_qrels"]) == (6, 8)
    assert got["unknown_query_ids"] == [f"lost{i}" for i in range(6)]
    assert got["unknown_doc_ids"] == [f"ghost{i}.md" for i in range(7)]
    assert ("spec" in got) == bool(embedder)  # fusion tuned only with dense vectors


def test_tune_names_lab_labels_that_match_no_document_as_eval_does(data, tmp_path):
    folder = str(tmp_path / "ix")
    run("index", data["corpus"], "--index", folder)
    lab = tmp_path / "lab.jsonl"
    lines = [{"query": t, "label": t} for t in TOPICS] + [{"query": "x", "label": "zz"}]
    lab.write_text("".join(json.dumps(line) + "\n" for line in lines))
    args = ["tune", "--index", folder, "--queries", str(lab), "--folds", "2", "--dry-run"]
    expected = "labels matching no document (those queries can never be answered): zz"
    assert expected in run(*args).output.splitlines()
    assert json.loads(run(*args, "--json").stdout)["unmatched_labels"] == ["zz"]
    evaluated = run("eval", "--corpus", data["corpus"], "--queries", str(lab), "--index", folder)
    assert expected in evaluated.output.splitlines()


def test_tune_says_nothing_when_every_judgment_fits(data, tmp_path):
    folder = str(tmp_path / "ix")
    run("index", data["corpus"], "--index", folder)
    qrels = tmp_path / "clean.tsv"
    qrels.write_text("".join(f"{t}\t{t}.md\t1\n" for t in TOPICS))
    args = ["tune", "--index", folder, "--queries", data["queries"], "--qrels", str(qrels)]
    text = run(*args, "--folds", "2", "--dry-run").output
    assert "judged queries missing" not in text and "judged documents not in" not in text
    got = json.loads(run(*args, "--folds", "2", "--dry-run", "--json").stdout)
    assert got["unknown_query_ids"] == [] and got["unknown_docs_in_qrels"] == 0


# --- chunk flags with an existing --index -------------------------------------------------


def _chunking(folder: str) -> tuple[str, int, int, str]:
    with api.open_index(folder) as idx:
        spec = idx.settings.chunk
    return spec.chunker, spec.size, spec.overlap, spec.tokenizer


def test_eval_chunk_flags_keep_the_index_settings_they_do_not_name(data, tmp_path):
    folder = str(tmp_path / "ix")
    built = ("--chunker", "paragraph", "--size", "800", "--overlap", "0", "--tokenizer", "chars4")
    run("index", data["corpus"], "--index", folder, *built)
    got = json.loads(
        run("eval", *_labeled(data), "--index", folder, "--size", "300", "--json").stdout
    )
    assert (got["chunker"], got["size"], got["tokenizer"]) == ("paragraph", 300, "chars4")
    assert _chunking(folder) == ("paragraph", 300, 0, "chars4")  # as `index --size 300` does
    kept = json.loads(run("eval", *_labeled(data), "--index", folder, "--json").stdout)
    assert (kept["chunker"], kept["size"], kept["tokenizer"]) == ("paragraph", 300, "chars4")


def test_eval_chunk_flags_on_a_new_index_folder_start_from_the_defaults(data, tmp_path):
    folder = str(tmp_path / "new")
    got = json.loads(
        run("eval", *_labeled(data), "--index", folder, "--size", "64", "--json").stdout
    )
    assert (got["chunker"], got["size"], got["tokenizer"]) == ("auto", 64, "cl100k")


def test_eval_overlap_against_the_index_size_names_where_each_came_from(data, tmp_path):
    folder = str(tmp_path / "ix")
    run("index", data["corpus"], "--index", folder, "--size", "64")
    message = fails("eval", *_labeled(data), "--index", folder, "--overlap", "64")
    assert "(--overlap) must be smaller than the chunk size 64 (the index's size)" in message
    assert _chunking(folder)[1:3] == (64, 0)  # the index is untouched


def test_eval_help_says_omitted_chunk_flags_keep_the_index_settings():
    text = " ".join(run("eval", "--help").output.split())
    assert "default: the index's, else auto" in text
    assert "a flag left out keeps DIR's own setting" in text

"""The CLI agrees with the API: --json shapes, one-line errors, exit codes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ctxselect.interfaces.cli import commands, experiments  # noqa: F401
from ctxselect.interfaces.cli.main import cli, main  # noqa: F401  (main registers commands)

HIT_KEYS = {"rank", "chunk_id", "doc_id", "score", "start", "end", "n_tokens", "text", "header"}


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "01-intro.md").write_text(
        "# Intro\n\nThis tool selects context under a token budget.\n\n"
        "## Budgets\n\nA budget is counted in tokens, framing included.\n",
        encoding="utf-8",
    )
    (root / "02-rank.md").write_text(
        "# Ranking\n\nBM25 ranks chunks; TF-IDF is the inspectable baseline.\n",
        encoding="utf-8",
    )
    return root


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def index(corpus, tmp_path):
    folder = str(tmp_path / "ix")
    result = run("index", str(corpus), "--index", folder, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["added"] == 2 and report["documents"] == 2
    return folder


def test_search_json_hits_have_the_documented_keys(index):
    result = run("search", "bm25 ranks", "--index", index, "--json", "-k", "2")
    hits = json.loads(result.output)
    assert hits and set(hits[0]) == HIT_KEYS and hits[0]["doc_id"] == "02-rank.md"
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))


def test_index_env_var_replaces_the_flag(index):
    result = run("search", "budget", "--json", env={"CTXSELECT_INDEX": index})
    assert result.exit_code == 0 and json.loads(result.output)[0]["doc_id"] == "01-intro.md"


def test_select_json_and_text(index):
    result = run("select", "token budget", "--budget", "200", "--index", index, "--json")
    selection = json.loads(result.output)
    assert {"chunks", "tokens_used", "budget", "dropped"} <= set(selection)
    assert 0 < selection["tokens_used"] <= 200
    text = run("select", "token budget", "--budget", "200", "--index", index, "--format", "xml")
    assert text.exit_code == 0 and "<chunk source=" in text.stdout


def test_explain_json_terms_sum_to_score(index):
    hits = json.loads(run("search", "token budget", "--index", index, "--json").output)
    result = run("explain", "token budget", "--chunk-id", hits[0]["chunk_id"], "--index", index,
                 "--json")  # fmt: skip
    explanation = json.loads(result.output)
    assert set(explanation["terms"][0]) == {"term", "tf", "df", "idf", "contribution"}
    total = sum(t["contribution"] for t in explanation["terms"])
    assert total == pytest.approx(explanation["score"], rel=1e-6)
    assert explanation["score"] == pytest.approx(hits[0]["score"], rel=1e-6)


def test_info_and_chunk(index, corpus):
    info = json.loads(run("info", "--index", index, "--json").output)
    assert info["documents"] == 2 and "bm25" in info["modes"]
    chunks = json.loads(run("chunk", str(corpus / "01-intro.md"), "--chunker", "markdown",
                            "--json").output)  # fmt: skip
    assert chunks and all(c["text"] for c in chunks)


def test_reindex_unchanged_reports_no_work(index, corpus):
    again = json.loads(run("index", str(corpus), "--index", index, "--json").output)
    assert again["unchanged"] == 2 and again["rebuilt"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["search", "x", "--mode", "nope"],
            "unknown mode 'nope': choose one of bm25, dense, hybrid, tfidf",
        ),
        (["select", "x", "--budget", "100", "--packer", "nope"], "unknown packer 'nope'"),
        (["select", "x", "--budget", "100", "--format", "nope"], "unknown format 'nope'"),
        (["explain", "x", "--chunk-id", "nope#0"], "chunk 'nope#0' is not in this index"),
    ],
)
def test_bad_names_are_one_line_errors_listing_valid_names(index, args, message):
    result = CliRunner().invoke(cli, [*args, "--index", index])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_unknown_chunker_and_tokenizer(tmp_path, corpus):
    for flag, value, message in [("--chunker", "nope", "unknown chunker 'nope'"),
                                 ("--tokenizer", "nope", "unknown tokenizer 'nope'")]:  # fmt: skip
        result = CliRunner().invoke(cli, ["index", str(corpus), "--index",
                                          str(tmp_path / "x"), flag, value])  # fmt: skip
        assert result.exit_code == 1 and message in result.stderr


def test_missing_index_names_the_command_that_creates_it(tmp_path):
    result = CliRunner().invoke(cli, ["search", "x", "--index", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert "ctxselect index PATH... --index" in result.stderr


def test_debug_shows_the_traceback(tmp_path):
    result = CliRunner().invoke(cli, ["--debug", "search", "x", "--index", str(tmp_path / "no")])
    assert result.exit_code != 0 and result.exception is not None


def test_budget_below_framing_is_an_empty_selection_not_a_crash(index):
    result = run("select", "token budget", "--budget", "2", "--index", index, "--json")
    selection = json.loads(result.output)
    assert result.exit_code == 0 and selection["chunks"] == [] and selection["tokens_used"] == 0
    assert "smaller than the smallest framed chunk" in selection["note"]


def test_python_dash_m_works(index):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "ctxselect", "search", "budget", "--index", index,
                          "--json"], capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(out.stdout)[0]["doc_id"] == "01-intro.md"


def test_unwritable_output_is_a_one_line_error(corpus, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "budget"}\n', encoding="utf-8")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\t01-intro.md\t1\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "--corpus", str(corpus), "--queries", str(queries),
                                      "--qrels", str(qrels), "--index", str(tmp_path / "ix"),
                                      "--run-out", str(tmp_path / "no" / "run.trec")])  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_eval_on_a_folder_corpus(corpus, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "q1", "text": "bm25 ranking"}\n', encoding="utf-8")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\t02-rank.md\t1\n", encoding="utf-8")
    result = run("eval", "--corpus", str(corpus), "--queries", str(queries), "--qrels",
                 str(qrels), "--index", str(tmp_path / "ix"), "--metrics", "ndcg@10,mrr@10",
                 "--json")  # fmt: skip
    data = json.loads(result.output)
    assert data["metrics"] == {"ndcg@10": 1.0, "mrr@10": 1.0} and data["n_queries"] == 1

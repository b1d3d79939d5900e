"""The CLI agrees with the API: --json shapes, one-line errors, exit codes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ctxselect.interfaces.cli import commands, experiments  # noqa: F401
from ctxselect.interfaces.cli.main import cli, main  # noqa: F401  (main registers commands)

HIT_KEYS = {"rank", "chunk_id", "doc_id", "score", "start", "end", "n_tokens", "text", "header"}
HIT_KEYS |= {"p_relevant"}  # None unless the index is calibrated (`ctxselect tune`)


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
    assert set(explanation["terms"][0]) == {"term", "tf", "df", "idf", "contribution", "form"}
    # the docs index does not split identifiers (off by default): no term has a form
    assert all(t["form"] == "" for t in explanation["terms"])
    total = sum(t["contribution"] for t in explanation["terms"])
    assert total == pytest.approx(explanation["score"], rel=1e-6)
    assert explanation["score"] == pytest.approx(hits[0]["score"], rel=1e-6)


def test_a_selection_capped_by_k_does_not_claim_there_are_no_more_matches(index):
    args = ("select", "budget tokens ranks", "--budget", "5000", "--stop", "none")
    capped = json.loads(run(*args, "-k", "1", "--index", index, "--json").output)
    assert capped["stop"] == (  # it said "no more matches" with more ranked below
        "end of the ranking: all 1 ranked chunks considered (-k 1; a larger k ranks more)"
    )
    assert json.loads(run(*args, "--index", index, "--json").output)["stop"] == "no more matches"


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
        (["select", "x", "--budget", "99"], "budget 99 is below the minimum of 100 tokens"),
        (["search", "x", "-k", "0"], "k (number of hits) must be a whole number >= 1, got 0"),
        (["select", "x", "--stop", "1.5"], "stop threshold '1.5' is outside [0, 1]"),
        (["search", "x", "--where", "badformat"], "where condition 'badformat' has no '='"),
    ],
)
def test_bad_flag_values_are_usage_errors_listing_what_is_valid(index, args, message):
    result = CliRunner().invoke(cli, [*args, "--index", index])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Usage: ") and f" {args[0]} [OPTIONS]" in result.stderr
    assert f"Error: Invalid value for '{args[-2]}': {message}" in result.stderr


def test_errors_found_by_the_run_are_one_line_with_exit_1(index):
    args = ["explain", "x", "--chunk-id", "nope#0", "--index", index]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "chunk 'nope#0' is not in this index" in result.stderr


def test_unknown_chunker_and_tokenizer(tmp_path, corpus):
    for flag, value, message in [("--chunker", "nope", "unknown chunker 'nope'"),
                                 ("--tokenizer", "nope", "unknown tokenizer 'nope'")]:  # fmt: skip
        for command in (["index", str(corpus), "--index", str(tmp_path / "x")],
                        ["chunk", str(corpus / "01-intro.md")]):  # fmt: skip
            result = CliRunner().invoke(cli, [*command, flag, value])
            assert result.exit_code == 2 and message in result.stderr
            assert result.stderr.startswith("Usage: ")
        assert not (tmp_path / "x").exists()  # refused before anything is written


def test_missing_index_names_the_command_that_creates_it(tmp_path):
    result = CliRunner().invoke(cli, ["search", "x", "--index", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert "ctxselect index PATH... --index" in result.stderr


def test_debug_shows_the_traceback(tmp_path):
    result = CliRunner().invoke(cli, ["--debug", "search", "x", "--index", str(tmp_path / "no")])
    assert result.exit_code != 0 and result.exception is not None


def test_budget_below_the_minimum_is_refused_as_mcp_refuses_it(index):
    from ctxselect import agent, api
    from ctxselect.errors import ConfigError

    result = CliRunner().invoke(cli, ["select", "token budget", "--budget", "2", "--index", index])
    with pytest.raises(ConfigError) as facade:
        agent.check_budget(2, None)  # what MCP select raises for budget=2
    assert result.exit_code == 2 and str(facade.value) in result.stderr
    assert "budget 2 is below the minimum of 100 tokens" in result.stderr
    with api.open_index(index) as idx:  # select_ranked still packs tiny budgets: empty
        with pytest.raises(ConfigError, match="budget 2 is below the minimum of 100 tokens"):
            idx.select("token budget", 2)  # Index.select takes the CLI's range
        selection = idx.select_ranked(idx.rank("token budget", idx.depth(2)), 2)
    assert selection.chunks == () and "smaller than the smallest framed chunk" in selection.note


def test_select_budget_defaults_to_the_mcp_default(index):
    from ctxselect import agent

    selection = json.loads(run("select", "token budget", "--index", index, "--json").output)
    assert selection["budget"] == agent.DEFAULT_BUDGET == 2000


def test_xml_context_keeps_code_as_written(tmp_path):
    root = tmp_path / "code"
    root.mkdir()
    (root / "f.md").write_text(
        "# Types\n\nThe signature `def f(x) -> bool` returns x < 3 && y.\n", encoding="utf-8"
    )
    folder = str(tmp_path / "cx")
    run("index", str(root), "--index", folder)
    text = run("select", "signature", "--index", folder, "--format", "xml").stdout
    assert "`def f(x) -> bool` returns x < 3 && y." in text and "&gt;" not in text
    assert "<![CDATA[" in text


def _lines(corpus, doc_id, start, end):
    text = (corpus / doc_id).read_text(encoding="utf-8")
    return text.count("\n", 0, start) + 1, text.count("\n", 0, max(start, end - 1)) + 1


def test_search_and_select_show_line_numbers(index, corpus):
    hit = json.loads(run("search", "budgets counted", "--index", index, "-k", "1",
                         "--json").output)[0]  # fmt: skip
    first, last = _lines(corpus, hit["doc_id"], hit["start"], hit["end"])
    assert last > first > 1  # the second section of 01-intro.md
    text = run("search", "budgets counted", "--index", index, "-k", "1").stdout
    assert f"{hit['chunk_id']}  lines {first}-{last}  [" in text
    args = ["select", "token budget", "--budget", "200", "--index", index]
    result = run(*args)
    pieces = json.loads(run(*args, "--json").output)["chunks"]
    summary = result.stderr.splitlines()
    assert summary[0].startswith(f"-- {len(pieces)} piece(s)") and len(summary) == 1 + len(pieces)
    for piece, line in zip(pieces, summary[1:], strict=True):
        first, last = _lines(corpus, piece["doc_id"], piece["start"], piece["end"])
        assert line.strip() == (
            f"{piece['doc_id']} lines {first}-{last} (chars {piece['start']}-{piece['end']}), "
            f"{piece['tokens']} tokens"
        )


def test_info_prints_key_value_lines_and_the_compaction_state(index, corpus):
    from dataclasses import replace

    from ctxselect import api
    from ctxselect.interfaces.cli import render

    text = run("info", "--index", index).stdout
    lines = text.splitlines()
    assert all(" = " in line for line in lines) and "{" not in text and "'" not in text
    assert "documents = 2" in lines and "chunk.tokenizer = cl100k" in lines
    assert "bm25.k1 = 1.5" in lines and "bm25.stem = true" in lines
    assert f"roots = {corpus}" in lines and "generation = 1 (0 delta segment(s))" in lines
    assert any(line.startswith("status = up to date") for line in lines)
    data = json.loads(run("info", "--index", index, "--json").output)
    assert {"settings", "generation", "delta_rows"} <= set(data)  # --json: the API's value
    with api.open_index(index) as idx:
        pending = replace(idx.info(), delta_rows=3, deleted_rows=2)
    status = next(line for line in render.info(pending).splitlines() if "status" in line)
    assert status.startswith("status = 5 change(s) pending compaction (3 chunk(s) added, 2 ")
    assert "`ctxselect compact`" in status


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
    run_out = tmp_path / "q.jsonl" / "run.trec"  # its folder would be a file: it cannot be made
    args = ["eval", "--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels)]
    args += ["--index", str(tmp_path / "ix"), "--run-out", str(run_out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert not (tmp_path / "ix").exists()  # refused before any work


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

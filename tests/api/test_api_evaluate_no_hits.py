"""A query without a hit is counted as missing from the run, as its TREC file reads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxselect.api.evaluate import evaluate_corpus
from ctxselect.eval import load_qrels, read_trec_run
from ctxselect.interfaces.cli import docgen  # noqa: F401  (registers every command)
from ctxselect.interfaces.cli.main import cli


@pytest.fixture
def beir(tmp_path: Path) -> dict[str, Path]:
    """Three documents; query q3 shares no word with any of them (e.g. NFCorpus 'eggnog')."""
    texts = {"d1": "clock domain crossing", "d2": "fifo depth gray code", "d3": "reset tree"}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in texts.items()))
    questions = {"q1": "clock crossing", "q2": "fifo depth", "q3": "eggnog"}
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in questions.items())
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n")
    return {"corpus": corpus, "queries": queries, "qrels": qrels, "root": tmp_path}


@pytest.mark.parametrize("level", ["doc", "chunk"])
def test_a_query_with_no_hit_is_missing_from_the_run(beir, level):
    run_out = beir["root"] / f"{level}.trec"
    result = evaluate_corpus(
        beir["corpus"],
        beir["queries"],
        beir["qrels"],
        index=beir["root"] / "ix",
        metrics=("mrr@10",),
        level=level,
        run_out=run_out,
    )
    assert result.n_queries == 3 and result.missing_from_run == 1
    assert set(read_trec_run(run_out)) == {"q1", "q2"}  # the file has no line for q3
    if level == "doc":
        assert set(load_qrels(beir["qrels"])) == {"q1", "q2", "q3"}


def test_the_cli_names_the_queries_without_a_hit(beir):
    args = ["eval", "--corpus", str(beir["corpus"]), "--queries", str(beir["queries"])]
    args += ["--qrels", str(beir["qrels"]), "--index", str(beir["root"] / "ix")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "queries with no hit (scored 0): 1" in result.output
    shown = CliRunner().invoke(cli, [*args, "--json"])
    assert json.loads(shown.stdout)["missing_from_run"] == 1

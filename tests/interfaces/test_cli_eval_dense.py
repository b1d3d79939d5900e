"""eval, sweep and lab with --mode(s) dense|hybrid --embedder on a BEIR-layout corpus."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ctxselect.interfaces.cli import commands, experiments  # noqa: F401  (register commands)
from ctxselect.interfaces.cli.main import cli

DOCS = {
    "d1": ("Budgets", "A token budget caps the context sent to the model."),
    "d2": ("Ranking", "BM25 ranks chunks by term frequency and document length."),
    "d3": ("Cooking", "Simmer the onions until golden, then add the garlic."),
    "d4": ("Bread", "Bread dough rises in two hours in a warm kitchen."),
}
QUERIES = {"q1": ("token budget context", "d1"), "q2": ("term frequency ranking", "d2"),
           "q3": ("onions garlic", "d3"), "q4": ("dough rises", "d4")}  # fmt: skip


@pytest.fixture(scope="module")
def beir(tmp_path_factory):
    root = tmp_path_factory.mktemp("beir")
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": t, "text": x}) + "\n" for d, (t, x) in DOCS.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, (_, d) in QUERIES.items())
    )
    return root


def labeled(root) -> list[str]:
    return ["--corpus", str(root / "corpus.jsonl"), "--queries", str(root / "queries.jsonl"),
            "--qrels", str(root / "qrels" / "test.tsv")]  # fmt: skip


def invoke(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    return result


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_eval_dense_modes_with_the_hash_embedder(beir, tmp_path, mode):
    folder = str(tmp_path / "ix")
    result = invoke("eval", *labeled(beir), "--mode", mode, "--embedder", "hash", "--index",
                    folder, "--budgets", "200", "--json")  # fmt: skip
    data = json.loads(result.stdout)
    assert data["mode"] == mode and data["n_queries"] == len(QUERIES)
    assert data["embedder"].startswith("hash")
    assert 0.0 < data["metrics"]["ndcg@10"] <= 1.0 and data["metrics"]["recall@100"] == 1.0
    assert 0 < data["metrics"]["tokens_used@200t"] <= 200
    text = invoke("eval", *labeled(beir), "--mode", mode, "--index", folder).stdout
    assert f"mode {mode}" in text and "embedder hash" in text  # the index keeps its embedder


def test_eval_dense_without_an_embedder_names_the_flag(beir, tmp_path):
    result = invoke("eval", *labeled(beir), "--mode", "dense", "--index", str(tmp_path / "kw"),
                    code=1)  # fmt: skip
    assert result.stderr.count("\n") == 1
    assert "mode dense ranks by dense vectors" in result.stderr
    assert "--embedder minilm" in result.stderr and "`ctxselect eval`" in result.stderr


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_sweep_and_lab_need_an_embedder_for_dense_modes(beir, tmp_path, mode):
    sweep = invoke("sweep", *labeled(beir), "--modes", f"bm25,{mode}", "--out",
                   str(tmp_path / "sw"), "--no-plots", code=1)  # fmt: skip
    assert sweep.stderr.count("\n") == 1
    assert f"sweep mode {mode} embeds the chunks and queries" in sweep.stderr
    assert "--embedder minilm" in sweep.stderr and "--embedder hash" in sweep.stderr
    assert not (tmp_path / "sw").exists()
    labels = tmp_path / "lab.jsonl"
    labels.write_text('{"query": "token budget", "label": "d1"}\n')
    lab = invoke("lab", "--corpus", str(beir / "corpus.jsonl"), "--queries", str(labels),
                 "--mode", mode, code=1)  # fmt: skip
    assert f"lab mode {mode} embeds" in lab.stderr and "--embedder minilm" in lab.stderr


def test_sweep_bm25_and_hybrid_with_the_hash_embedder(beir, tmp_path):
    out = tmp_path / "sw"
    args = ["sweep", *labeled(beir), "--modes", "bm25,hybrid", "--embedder", "hash",
            "--sizes", "64", "--budgets", "100,200", "--out", str(out), "--no-plots"]  # fmt: skip
    data = json.loads(invoke(*args, "--json").stdout)
    assert [s["mode"] for s in data["sizes"]] == ["bm25", "hybrid"]
    assert data["computed"] == 2 * 3 and data["reused"] == 0
    hybrid = data["sizes"][1]["metrics"]
    assert 0.0 < hybrid["ndcg@10"] <= 1.0 and hybrid["recall@100"] == 1.0
    assert "hybrid" in (out / "tables.txt").read_text(encoding="utf-8")
    again = invoke(*args)
    assert "hybrid" in again.stdout and "0 configuration(s) measured, 6 reused" in again.stderr


def test_sweep_unknown_embedder_lists_the_choices(beir, tmp_path):
    result = invoke("sweep", *labeled(beir), "--modes", "dense", "--embedder", "nope",
                    "--out", str(tmp_path / "sw"), "--no-plots", code=1)  # fmt: skip
    assert "unknown embedder 'nope'" in result.stderr and "hash" in result.stderr


def test_lab_dense_with_the_hash_embedder(beir, tmp_path):
    labels = tmp_path / "lab.jsonl"
    labels.write_text("".join(json.dumps({"query": t, "label": d}) + "\n"
                              for t, d in QUERIES.values()))  # fmt: skip
    result = invoke("lab", "--corpus", str(beir / "corpus.jsonl"), "--queries", str(labels),
                    "--mode", "dense", "--embedder", "hash", "--sizes", "200",
                    "--budgets", "100", "--json")  # fmt: skip
    data = json.loads(result.stdout)
    assert data["mode"] == "dense" and data["embedder"] == "hash-v1-256"
    assert data["size_rows"][0]["n_queries"] == len(QUERIES)

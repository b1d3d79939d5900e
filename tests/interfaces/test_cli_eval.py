"""The measuring commands: eval with budgets, sweep, cost, compare (--json, errors, exits)."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails, run

from ctxselect.interfaces.cli import commands, experiments  # noqa: F401  (register commands)

DOCS = {
    "01-budget.md": "A token budget caps the context.\n\nFraming lines count in the budget.\n",
    "02-rank.md": "BM25 ranks chunks by term frequency.\n\nTF-IDF is the baseline.\n",
    "03-cook.md": "Simmer the onions until golden.\n\nBread dough rises in two hours.\n",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-eval")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    queries = root / "queries.jsonl"
    queries.write_text(
        '{"_id": "q1", "text": "framing lines budget"}\n'
        '{"_id": "q2", "text": "bm25 term frequency"}\n'
        '{"_id": "q3", "text": "unjudged question"}\n',
        encoding="utf-8",
    )
    qrels = root / "qrels.tsv"
    qrels.write_text(
        "q1\t01-budget.md\t1\nq2\t02-rank.md\t1\nq2\tghost.md\t1\nq7\t03-cook.md\t1\n",
        encoding="utf-8",
    )
    return {"root": root, "corpus": str(corpus), "queries": str(queries), "qrels": str(qrels)}


def labeled(files) -> list[str]:
    return ["--corpus", files["corpus"], "--queries", files["queries"], "--qrels", files["qrels"]]


def test_eval_with_budgets_json_and_per_query_file(files, tmp_path):
    per_query = tmp_path / "pq.jsonl"
    result = run(
        "eval",
        *labeled(files),
        "--index",
        str(tmp_path / "ix"),
        "--budgets",
        "150,400",
        "--metrics",
        "ndcg@10,recall@100t",
        "--per-query",
        str(per_query),
        "--json",
    )
    data = json.loads(result.stdout)
    assert data["budgets"] == [100, 150, 400] and data["packer"] == "skip"
    assert data["level"] == "doc" and data["label_kind"] == "documents"
    assert set(data["metrics"]) == {"ndcg@10"} | {
        f"{m}@{b}t"
        for m in ("recall", "hit", "relevant-tokens", "tokens_used", "chunks")
        for b in (100, 150, 400)
    }
    assert data["metrics"]["hit@400t"] == 1.0 and data["metrics"]["tokens_used@150t"] <= 150
    # q2's second relevant document is not in the corpus: it counts, as in recall@k
    assert data["metrics"]["recall@400t"] == pytest.approx((1 + 1 / 2) / 2)
    assert data["n_queries"] == 2 and data["excluded_no_relevant"] == 1
    assert data["unknown_queries_in_qrels"] == 1 and data["unknown_docs_in_qrels"] == 1
    assert data["unknown_query_ids"] == ["q7"] and data["unknown_doc_ids"] == ["ghost.md"]
    lines = [json.loads(line) for line in per_query.read_text().splitlines()]
    assert [line["qid"] for line in lines] == ["q1", "q2"] and "recall@150t" in lines[0]
    assert data["per_query_path"] == str(per_query)
    text = run("eval", *labeled(files), "--index", str(tmp_path / "ix"), "--budgets", "400")
    assert (
        "recall@400t" in text.output
        and "judged queries missing from the queries file: 1 (q7)" in text.output
        and "judged documents not in the corpus: 1 (ghost.md)" in text.output
    )


def test_eval_at_chunk_level_with_span_labels(files, tmp_path):
    spans = tmp_path / "spans.jsonl"
    spans.write_text(
        '{"qid": "q1", "doc_id": "01-budget.md", "start": 34, "end": 68}\n', encoding="utf-8"
    )
    data = json.loads(
        run(
            "eval",
            "--corpus",
            files["corpus"],
            "--queries",
            files["queries"],
            "--spans",
            str(spans),
            "--index",
            str(tmp_path / "ix"),
            "--level",
            "chunk",
            "--chunker",
            "paragraph",
            "--size",
            "10",
            "--metrics",
            "hit@1",
            "--json",
        ).stdout
    )
    assert data["label_kind"] == "spans" and data["level"] == "chunk"
    assert data["metrics"] == {"hit@1": 1.0} and data["n_queries"] == 1


def test_sweep_json_recommend_and_tables(files, tmp_path):
    out = str(tmp_path / "sweep")
    common = [
        "sweep",
        *labeled(files),
        "--sizes",
        "20,60",
        "--budgets",
        "100,200,400",
        "--out",
        out,
        "--no-plots",
    ]
    data = json.loads(run(*common, "--json").stdout)
    assert {
        "dataset",
        "documents",
        "n_queries",
        "grid",
        "curves",
        "sizes",
        "recommended",
        "recommended_configuration",
        "costs",
        "uncached",
        "files",
        "computed",
        "reused",
    } <= set(data)
    assert data["grid"]["sizes"] == {"tokens": [20, 60]} and data["computed"] == 8
    assert set(data["recommended"]) == {
        "budget",
        "recall",
        "fitted",
        "next_budget",
        "gain_after",
        "delta",
        "metric",
        "best_recall",
        "best_budget",
        "at_edge",
        "at_lower_edge",
    }
    assert data["delta"] == pytest.approx(0.02 * 1.9) and data["knee_metric"] == "recall"
    text = run(*common, "--recommend")
    assert text.stdout.strip() == str(data["recommended"]["budget"])
    assert "0 configuration(s) measured, 8 reused" in text.stderr
    rec = json.loads(run(*common, "--recommend", "--json").stdout)
    assert rec["budget"] == data["recommended"]["budget"] and len(rec["knees"]) == 2
    assert rec["at_lower_edge"] == data["recommended"]["at_lower_edge"]
    tables = run(*common).stdout
    assert "top-1 correct" in tables and "Recommended: tokens-" in tables
    assert "the cost per turn" in tables
    hit = json.loads(run(*common, "--recommend", "--json", "--knee-metric", "hit").stdout)
    assert hit["metric"] == "hit" and rec["metric"] == "recall"


def test_sweep_with_a_grid_file(files, tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'modes = ["bm25", "tfidf"]\nbudgets = [100, 500]\n[sizes]\ntokens = [30]\n',
        encoding="utf-8",
    )
    data = json.loads(
        run(
            "sweep",
            *labeled(files),
            "--grid",
            str(grid),
            "--out",
            str(tmp_path / "o"),
            "--no-plots",
            "--json",
        ).stdout
    )
    assert [c["label"] for c in data["curves"]] == ["tokens-30/bm25/skip", "tokens-30/tfidf/skip"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--chunkers", "nope"], "unknown chunker 'nope': choose one of"),
        (["--modes", "bm25,nope"], "unknown mode 'nope'"),
        (["--level", "page"], "unknown level 'page'"),
        (["--metrics", "recall@500t"], "is a budget metric"),
        (["--epsilon", "2"], "epsilon must be between 0 and 1"),
        (["--gain-per-1k", "0"], "gain per 1k tokens must be above 0"),
        (["--sizes", "tokens:x"], "whole numbers"),
    ],
)
def test_sweep_errors_are_one_line(files, tmp_path, extra, message):
    assert message in fails("sweep", *labeled(files), "--out", str(tmp_path), *extra)


def test_bad_input_files_are_one_line_errors_with_file_and_line(files, tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("budgets = [1,\nmodes = 3\n", encoding="utf-8")
    assert "not valid TOML" in fails("sweep", *labeled(files), "--grid", str(grid))
    spans = tmp_path / "spans.jsonl"
    spans.write_text('{"qid": "q1", "doc_id": "a", "start": 9, "end": 3}\n', encoding="utf-8")
    message = fails(
        "eval",
        "--corpus",
        files["corpus"],
        "--queries",
        files["queries"],
        "--spans",
        str(spans),
        "--index",
        str(tmp_path / "ix"),
    )
    assert f"{spans}:1: expected 0 <= start < end" in message
    assert "not both" in fails("eval", *labeled(files), "--spans", str(spans))


def test_cost_text_and_json():
    text = run(
        "cost", "--budget", "8000", "--turns", "10", "--cache-factor", "0.1", "--knee", "2000"
    ).output
    assert "billed over the session: 15,200 tokens" in text
    assert "surplus over the knee 2,000: 11,400 tokens" in text
    data = json.loads(run("cost", "--budget", "4000", "--cache-factor", "1", "--json").stdout)
    assert data == {
        "budget": 4000,
        "turns": 10,
        "cache_factor": 1.0,
        "factor": 10.0,
        "billed": 40000.0,
        "knee": None,
        "surplus": None,
    }
    # a number out of its range is a usage error (exit 2), as docs/cli.md says
    factor = fails("cost", "--budget", "1", "--cache-factor", "2", code=2)
    assert "'--cache-factor': cache factor must be a finite number from 0 to 1, got 2" in factor
    assert "'--turns': turns must be a whole number >= 1, got 0" in fails(
        "cost", "--budget", "1", "--turns", "0", code=2
    )


def test_compare_runs(files, tmp_path):
    run_a, run_b = tmp_path / "a.trec", tmp_path / "b.trec"
    for mode, path in (("bm25", run_a), ("tfidf", run_b)):
        run(
            "eval",
            *labeled(files),
            "--index",
            str(tmp_path / "ix"),
            "--mode",
            mode,
            "--run-out",
            str(path),
        )
    data = json.loads(
        run(
            "compare",
            str(run_a),
            str(run_a),
            "--qrels",
            files["qrels"],
            "--metrics",
            "ndcg@10,mrr@10",
            "--json",
        ).stdout
    )
    assert [m["metric"] for m in data["metrics"]] == ["ndcg@10", "mrr@10"]
    assert all(m["p_value"] == 1.0 and m["wins"] == 0 and m["losses"] == 0 for m in data["metrics"])
    assert data["permutations"] == 10000 and data["seed"] == 20240601
    assert data["missing_from_a"] == 1  # q7 is judged but in neither run
    text = run(
        "compare",
        str(run_a),
        str(run_b),
        "--qrels",
        files["qrels"],
        "--seed",
        "5",
        "--permutations",
        "500",
    ).output
    assert "500 permutations, seed 5" in text and "wins" in text
    assert "budget metric" in fails(
        "compare", str(run_a), str(run_b), "--qrels", files["qrels"], "--metrics", "recall@500t"
    )

"""Numeric options: NaN, infinities and out-of-range values are usage errors on every command;
``eval --run-out`` writes runs ``--depth`` deep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run
from click.testing import CliRunner

from ctxselect.interfaces.cli.main import cli

BAD_FLOATS = ("nan", "inf", "-inf", "1e308")
BAD_COUNTS = ("-1", "99999999999999999999", "1.5", "nan")

# command line with {v} where the value goes -> values refused
OPTIONS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "index --k1": (["index", "c", "--index", "new", "--k1", "{v}"], (*BAD_FLOATS, "-1", "11")),
    "index --b": (["index", "c", "--index", "new", "--b", "{v}"], (*BAD_FLOATS, "-0.1", "1.5")),
    "index --size": (["index", "c", "--index", "new", "--size", "{v}"], (*BAD_COUNTS, "0")),
    "index --overlap": (["index", "c", "--index", "new", "--overlap", "{v}"], BAD_COUNTS),
    "index --max-bytes": (["index", "c", "--index", "new", "--max-bytes", "{v}"], ("0", "nan")),
    "index --wait": (["index", "c", "--index", "new", "--wait", "{v}"], (*BAD_FLOATS, "-1")),
    "index --interval": (
        ["index", "c", "--index", "new", "--watch", "--interval", "{v}"],
        (*BAD_FLOATS, "0", "-1"),
    ),
    "add --wait": (["add", "c/a.md", "--index", "idx", "--wait", "{v}"], (*BAD_FLOATS, "-1")),
    "search -k": (["search", "alpha", "--index", "idx", "-k", "{v}"], ("0", "-1", "nan")),
    "explain -k": (["explain", "alpha", "--index", "idx", "-k", "{v}"], ("0", "inf")),
    "select -k": (["select", "alpha", "--budget", "500", "--index", "idx", "-k", "{v}"], ("0",)),
    "chunk --size": (["chunk", "c/a.md", "--size", "{v}"], (*BAD_COUNTS, "0")),
    "eval --budgets": (
        ["eval", "--corpus", "c", "--queries", "q.jsonl", "--index", "ev", "--budgets", "{v}"],
        ("-1", "500,nan", "99999999999999999999"),
    ),
    "eval --depth": (
        ["eval", "--corpus", "c", "--queries", "q.jsonl", "--index", "ev", "--depth", "{v}"],
        ("0", "-1", "inf", "5"),  # 5: shallower than the default metric ndcg@10
    ),
    "lab --sizes": (["lab", "--corpus", "c", "--queries", "q.jsonl", "--sizes", "{v}"], ("0,400",)),
    "lab --budget-chunk-chars": (
        ["lab", "--corpus", "c", "--queries", "q.jsonl", "--budget-chunk-chars", "{v}"],
        ("0", "99999999999999999999"),
    ),
    "sweep --budgets": (
        ["sweep", "--corpus", "c", "--queries", "q.jsonl", "--out", "sw", "--budgets", "{v}"],
        ("nan", "99999999999999999999"),
    ),
    "sweep --epsilon": (
        ["sweep", "--corpus", "c", "--queries", "q.jsonl", "--out", "sw", "--epsilon", "{v}"],
        BAD_FLOATS,
    ),
    "cost --budget": (["cost", "--budget", "{v}"], ("-1", "99999999999999999999", "nan")),
    "cost --knee": (["cost", "--budget", "100", "--knee", "{v}"], ("-1", "99999999999999999999")),
    "cost --cache-factor": (["cost", "--budget", "100", "--cache-factor", "{v}"], BAD_FLOATS),
    "compare --seed": (
        ["compare", "r.trec", "r.trec", "--qrels", "qrels.tsv", "--seed", "{v}"],
        ("-1", "nan"),
    ),
    "compare --permutations": (
        ["compare", "r.trec", "r.trec", "--qrels", "qrels.tsv", "--permutations", "{v}"],
        ("0", "99999999999999999999"),
    ),
    "tune --seed": (["tune", "--queries", "q.jsonl", "--index", "idx", "--seed", "{v}"], ("-1",)),
    "mcp --port": (["mcp", "--index", "idx", "--json", "--port", "{v}"], ("0", "-1", "70000")),
}
CASES = [(name, value) for name, (_, values) in OPTIONS.items() for value in values]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus, an index, queries, a run and qrels to point the commands at."""
    root = tmp_path_factory.mktemp("numbers")
    (root / "c").mkdir()
    for i in range(30):
        (root / "c" / f"d{i:02}.md").write_text(f"# Doc {i}\n\nalpha common{i} beta\n")
    (root / "c" / "a.md").write_text("# A\n\nalpha beta gamma\n", encoding="utf-8")
    (root / "q.jsonl").write_text(
        '{"query": "alpha", "label": "a.md"}\n{"query": "beta gamma", "label": "a.md"}\n'
    )
    (root / "r.trec").write_text("q1 Q0 a.md 1 1.0 t\n", encoding="utf-8")
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta.md\t1\n")
    run("index", str(root / "c"), "--index", str(root / "idx"))
    return root


@pytest.mark.parametrize(("option", "value"), CASES, ids=[f"{n}={v}" for n, v in CASES])
def test_bad_numbers_are_refused(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, value: str
) -> None:
    monkeypatch.chdir(workdir)
    new = tmp_path / "new"  # where index commands would build; each case its own
    args = [str(new) if a == "new" else a.replace("{v}", value) for a in OPTIONS[option][0]]
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (1, 2), (args, result.output)
    if result.exit_code == 1:  # an API ConfigError: one line naming the setting
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert " must be " in result.stderr or "shallower" in result.stderr, result.stderr
    assert not new.exists()  # nothing was built with the bad value


def _lines_per_query(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        counts[line.split()[0]] = counts.get(line.split()[0], 0) + 1
    return counts


def test_eval_run_is_written_depth_deep(workdir: Path, tmp_path: Path) -> None:
    corpus, queries = str(workdir / "c"), str(workdir / "q.jsonl")
    out = tmp_path / "run.trec"
    common = ["eval", "--corpus", corpus, "--queries", queries, "--index", str(tmp_path / "i")]
    # 31 documents hold "alpha": the default depth (1000) writes them all, not ndcg@10's 10
    text = run(*common, "--metrics", "ndcg@3", "--run-out", str(out)).output
    counts = _lines_per_query(out)
    assert max(counts.values()) == 31, counts
    assert "run 1000 deep" in text
    deep = json.loads(
        run(*common, "--metrics", "ndcg@3", "--depth", "5", "--run-out", str(out), "--json").output
    )
    assert max(_lines_per_query(out).values()) == 5
    assert deep["depth"] == 5
    # the metric is the same however deep the run goes
    shallow = json.loads(run(*common, "--metrics", "ndcg@3", "--depth", "3", "--json").output)
    assert shallow["metrics"] == deep["metrics"] and shallow["depth"] == 3

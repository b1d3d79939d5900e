"""Evaluation and stopping read a Milvus index as they read a folder: same figures.

``ctxselect eval --index milvus://...`` builds (or reuses) the index in the server, and
its metrics, budget metrics and ``--stop auto`` selections equal those of the same eval
on an embedded index (``sweep`` builds its indexes in memory, so no store is involved).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from store_kinds import milvus_uri

from ctxselect.interfaces.cli import experiments  # noqa: F401 - registers eval
from ctxselect.interfaces.cli.main import cli


def _corpus(tmp_path: Path) -> tuple[Path, Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    topics = ["foxes jump", "milvus search", "budget knee", "token windows", "dense vectors"]
    for i, topic in enumerate(topics):
        body = f"# {topic.title()}\n\n" + f"All about {topic}. " * 30 + f"\n\nNote {i}.\n"
        (docs / f"d{i}.md").write_text(body, encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    qrels = tmp_path / "qrels.tsv"
    queries.write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(topics)),
        encoding="utf-8",
    )
    rows = ["query-id\tcorpus-id\tscore", *(f"q{i}\td{i}.md\t1" for i in range(len(topics)))]
    qrels.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return docs, queries, qrels


def _eval(docs: Path, queries: Path, qrels: Path, index: str) -> dict[str, Any]:
    args = ["eval", "--corpus", str(docs), "--queries", str(queries), "--qrels", str(qrels)]
    args += ["--index", index, "--budgets", "200,400", "--stop", "auto", "--json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_eval_and_stopping_agree_on_both_stores(milvus_server: Any, tmp_path: Path) -> None:
    docs, queries, qrels = _corpus(tmp_path)
    embedded = _eval(docs, queries, qrels, str(tmp_path / "ix"))
    served = _eval(docs, queries, qrels, milvus_uri(tmp_path, milvus_server))
    assert embedded["metrics"] and served["metrics"] == embedded["metrics"]
    assert served["per_query"] == embedded["per_query"]

"""``ctxselect tune`` names a judged document with no text apart from unknown ones.

Both paths: an index with dense vectors tunes the fusion (its ``TuningReport`` carries the
counts), one without calibrates the keyword modes only (``index_label_mismatches``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run

import ctxselect as cs

N = 12
EMPTY_LINE = "judged documents that are empty (no text to index): 2 judgments of 1 document (e1)"
UNKNOWN_LINE = "judged documents not in the index: 1 (dx)"


def _tune_args(tmp_path: Path, embedder: str | None) -> list[str]:
    """Index a corpus with one empty document (``e1``, judged twice) and judge ``dx`` too."""
    records = [{"_id": f"d{i:02d}", "text": f"rare{i}a common words rare{i}b"} for i in range(N)]
    records.append({"_id": "e1", "title": "", "text": ""})  # skipped: never indexed
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    queries = [json.dumps({"_id": f"q{i}", "text": f"rare{i}a rare{i}b"}) for i in range(N)]
    (tmp_path / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    qrels = [f"q{i}\td{i:02d}\t1" for i in range(N)] + ["q0\te1\t1", "q2\te1\t1", "q1\tdx\t1"]
    (tmp_path / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix, embedder=embedder)
    return [
        "tune", "--queries", str(tmp_path / "queries.jsonl"), "--qrels",
        str(tmp_path / "qrels.tsv"), "--index", str(ix), "--folds", "2", "--dry-run",
    ]  # fmt: skip


@pytest.mark.parametrize("embedder", [None, "hash"], ids=["keyword-only", "fusion"])
def test_tune_json_counts_an_empty_judged_document_apart(tmp_path: Path, embedder) -> None:
    data = json.loads(run(*_tune_args(tmp_path, embedder), "--json").stdout)
    assert ("spec" in data) == (embedder is not None)  # both paths are exercised
    assert (data["empty_docs_in_qrels"], data["empty_doc_ids"]) == (2, ["e1"])
    assert (data["unknown_docs_in_qrels"], data["unknown_doc_ids"]) == (1, ["dx"])


@pytest.mark.parametrize("embedder", [None, "hash"], ids=["keyword-only", "fusion"])
def test_tune_text_names_an_empty_judged_document(tmp_path: Path, embedder) -> None:
    lines = run(*_tune_args(tmp_path, embedder)).stdout.splitlines()
    assert any(line.startswith("chosen:") for line in lines) == (embedder is not None)
    assert EMPTY_LINE in lines
    assert UNKNOWN_LINE in lines  # the empty document is not called unknown


def test_tune_text_on_cranfield_names_995(cranfield_dir: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    cs.index_paths([cranfield_dir / "corpus.jsonl"], ix)
    out = run(
        "tune", "--queries", str(cranfield_dir / "queries.jsonl"), "--qrels",
        str(cranfield_dir / "qrels" / "test.tsv"), "--index", str(ix), "--dry-run",
    ).stdout  # fmt: skip
    assert "judged documents that are empty (no text to index): 1 (995)" in out.splitlines()
    assert "judged documents not in the index" not in out

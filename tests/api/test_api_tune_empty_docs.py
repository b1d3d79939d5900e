"""``tune`` tells a judged document with no text (skipped, never indexed) from an unknown one.

Ingest skips an empty document (Cranfield's ``995``), so the index has never heard of it;
``eval`` and ``sweep`` count its judgments as ``empty_docs``, and ``tune`` must too, while
they keep counting in every metric (nothing can retrieve that document).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.api.calibrate import index_label_mismatches
from ctxselect.api.tune import tune_index

N = 12
FILLER = "common shared words appear everywhere in this corpus"


def _labels(folder: Path, extra: list[str]) -> tuple[Path, Path]:
    """Query i names the rare words of document i; ``extra`` qrels lines are added."""
    queries = [json.dumps({"_id": f"q{i}", "text": f"rare{i}a rare{i}b"}) for i in range(N)]
    qrels = ["query-id\tcorpus-id\tscore", *(f"q{i}\td{i:02d}\t1" for i in range(N)), *extra]
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (folder / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return folder / "queries.jsonl", folder / "qrels.tsv"


@pytest.fixture
def beir(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A BEIR corpus with one empty document (``e1``) judged twice, and one unknown id."""
    records = [
        {"_id": f"d{i:02d}", "title": "", "text": f"rare{i}a {FILLER} rare{i}b"} for i in range(N)
    ]
    records.append({"_id": "e1", "title": "", "text": ""})
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    queries, qrels = _labels(tmp_path, ["q0\te1\t1", "q1\te1\t2", "q2\tdx\t1"])
    return corpus, queries, qrels


def test_tune_counts_an_empty_judged_document_apart_from_unknown_ones(beir, tmp_path) -> None:
    corpus, queries, qrels = beir
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix, embedder="hash")
    report = tune_index(ix, queries, qrels, folds=2, write=False)
    assert (report.empty_docs_in_qrels, report.empty_doc_ids) == (2, ("e1",))
    assert (report.unknown_docs_in_qrels, report.unknown_doc_ids) == (1, ("dx",))
    assert report.n_queries == N  # q0 and q1 still count: their judgments stay in the metric


def test_the_keyword_only_report_says_the_same(beir, tmp_path) -> None:
    corpus, queries, qrels = beir
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    found = index_label_mismatches(ix, queries, qrels)
    assert (found.empty_docs_in_qrels, found.empty_doc_ids) == (2, ("e1",))
    assert (found.unknown_docs_in_qrels, found.unknown_doc_ids) == (1, ("dx",))


def test_an_empty_file_of_a_folder_index_is_told_apart(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(N):
        (root / f"d{i:02d}").write_text(f"rare{i}a {FILLER} rare{i}b", encoding="utf-8")
    (root / "e1").write_text("  \n", encoding="utf-8")  # whitespace only: skipped as empty
    queries, qrels = _labels(tmp_path, ["q0\te1\t1", "q2\tgone\t1"])
    ix = tmp_path / "ix"
    assert cs.index_paths([root], ix).skipped["empty"] == 1
    found = index_label_mismatches(ix, queries, qrels)
    assert (found.empty_docs_in_qrels, found.empty_doc_ids) == (1, ("e1",))
    assert found.unknown_doc_ids == ("gone",)


def test_cranfield_995_is_empty_not_unknown(cranfield_dir: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    cs.index_paths([cranfield_dir / "corpus.jsonl"], ix)
    queries, qrels = cranfield_dir / "queries.jsonl", cranfield_dir / "qrels" / "test.tsv"
    found = index_label_mismatches(ix, queries, qrels)
    assert (found.unknown_docs_in_qrels, found.unknown_doc_ids) == (0, ())
    assert (found.empty_docs_in_qrels, found.empty_doc_ids) == (1, ("995",))

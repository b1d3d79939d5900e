"""A labeled set keeps the ids behind its counts, and finds empty documents in any source."""

from __future__ import annotations

import json
from pathlib import Path

from ctxselect.eval import load_labeled_set, note_empty_documents


def _labels(tmp_path: Path) -> tuple[Path, Path]:
    queries = [{"_id": q, "text": q} for q in ("q1", "q2", "q3", "q4")]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    qrels = ["q1\ta\t1", "q1\te1\t1", "q2\te2\t1", "q2\te2\t1", "q2\tgone\t1", "q3\ta\t0"]
    (tmp_path / "qrels.tsv").write_text("\n".join([*qrels, "q9\ta\t1"]) + "\n")
    return tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"


def test_the_excluded_query_ids_are_kept_sorted(tmp_path: Path) -> None:
    labeled = load_labeled_set(*_labels(tmp_path), None, {"a", "e2"}, len)
    # q3 judges nothing relevant, q4 is not judged at all: both are left out
    assert (labeled.excluded_no_relevant, labeled.excluded_query_ids) == (2, ("q3", "q4"))
    assert labeled.unknown_query_ids == ("q9",)
    assert set(labeled.queries).isdisjoint(labeled.excluded_query_ids)


def test_empty_documents_are_found_across_several_sources(tmp_path: Path) -> None:
    queries, qrels = _labels(tmp_path)
    beir = tmp_path / "corpus.jsonl"
    beir.write_text(json.dumps({"_id": "e1", "title": "", "text": ""}) + "\n")
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "e2").write_text("   \n")  # whitespace only
    labeled = load_labeled_set(queries, qrels, None, {"a"}, len)
    assert labeled.unknown_doc_ids == ("e1", "e2", "gone")
    found = note_empty_documents(labeled, [beir, folder], {"a"})
    assert (found.empty_docs, found.empty_doc_ids) == (2, ("e1", "e2"))
    assert (found.unknown_docs, found.unknown_doc_ids) == (1, ("gone",))
    # one source alone finds only its own
    assert note_empty_documents(labeled, folder, {"a"}).empty_doc_ids == ("e2",)

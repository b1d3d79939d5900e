"""diff_documents: added, modified, removed, unchanged; re-runs on an unchanged tree."""

from __future__ import annotations

from pathlib import Path

from ctxselect.ingest import ChangeSet, diff_documents, load_paths
from ctxselect.ingest.text import content_hash
from ctxselect.types import Document


def doc(doc_id: str, text: str) -> Document:
    return Document(doc_id=doc_id, text=text, content_hash=content_hash("", text))


def test_diff_splits_ids_by_change_and_sorts_them() -> None:
    old = {"b": content_hash("", "same"), "a": content_hash("", "old"), "z": "gone-hash"}
    new = [doc("c", "new"), doc("b", "same"), doc("a", "changed"), doc("0", "new too")]
    changes = diff_documents(old, new)
    assert changes == ChangeSet(added=("0", "c"), modified=("a",), removed=("z",), unchanged=("b",))
    assert changes.changed


def test_unchanged_tree_needs_no_work(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.md").write_text("# beta")
    first = load_paths(tmp_path).documents
    hashes = {d.doc_id: d.content_hash for d in first}
    again = diff_documents(hashes, load_paths(tmp_path).documents)
    assert again == ChangeSet(unchanged=("a.txt", "b.md"))
    assert not again.changed
    (tmp_path / "a.txt").write_text("alpha, edited")
    (tmp_path / "b.md").unlink()
    (tmp_path / "c.txt").write_text("gamma")
    after = diff_documents(hashes, load_paths(tmp_path).documents)
    assert after == ChangeSet(added=("c.txt",), modified=("a.txt",), removed=("b.md",))


def test_empty_inputs() -> None:
    assert diff_documents({}, []) == ChangeSet()
    assert diff_documents({"x": "h"}, []) == ChangeSet(removed=("x",))

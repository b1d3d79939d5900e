"""Planning a write: what ``add`` accepts is what a re-scan of the roots keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.errors import InputError
from ctxselect.index.plan import under_roots
from ctxselect.types import Document

RECORDS = [
    {"_id": "z1", "title": "Zebra", "text": "zebra migration across the plains"},
    {"_id": "p1", "title": "Pears", "text": "apples and pears in the orchard"},
]


def _corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return corpus


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha apples in the orchard\n", encoding="utf-8")
    return root


def test_add_refuses_a_beir_corpus_outside_the_roots(tmp_path: Path) -> None:
    root, ix = _root(tmp_path), tmp_path / "ix"
    cs.index_paths([root], ix)
    corpus = _corpus(tmp_path / "elsewhere")
    with pytest.raises(InputError, match=r"corpus\.jsonl is outside the index's roots"):
        cs.add_paths([corpus], ix)
    report = cs.index_paths([], ix)  # so a re-scan has nothing to take back
    assert (report.added, report.removed, report.unchanged, report.documents) == (0, 0, 1, 1)


def test_add_keeps_a_beir_corpus_inside_the_roots_and_its_ids(tmp_path: Path) -> None:
    root, ix = _root(tmp_path), tmp_path / "ix"
    cs.index_paths([root], ix)
    corpus = _corpus(root / "beir")
    assert cs.add_paths([corpus], ix).added == 2
    with cs.open_index(ix) as idx:
        assert idx.search("zebra migration")[0].doc_id == "z1"
    report = cs.index_paths([], ix)
    assert (report.removed, report.unchanged, report.documents) == (0, 3, 3)


def test_under_roots_checks_the_corpus_file_of_a_beir_record(tmp_path: Path) -> None:
    root = str(tmp_path / "docs")
    inside = Document("z1", "zebra", source=f"{root}/beir/corpus.jsonl:1", kind="beir")
    assert under_roots([inside], [root]) == [inside]  # a record keeps its own id
    outside = Document("z1", "zebra", source=f"{tmp_path}/corpus.jsonl:1", kind="beir")
    with pytest.raises(InputError, match="outside the index's roots"):
        under_roots([outside], [root])


def test_add_records_absolute_sources_as_index_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ix = _root(tmp_path), tmp_path / "ix"
    cs.index_paths([root], ix)
    (root / "b.md").write_text("beta bananas\n", encoding="utf-8")
    _corpus(root / "beir")
    (tmp_path / "link").symlink_to(root)  # a folder link to the root, outside it
    monkeypatch.chdir(tmp_path)
    cs.add_paths(["docs/b.md", "docs/beir/corpus.jsonl"], ix)  # typed relative to here
    cs.add_paths(["link/a.md"], ix)
    monkeypatch.chdir(root)  # where they were typed no longer matters
    with cs.open_index(ix) as idx:
        assert idx.get_document("b.md").source == str(root / "b.md")  # was "docs/b.md"
        assert idx.get_document("z1").source == f"{root / 'beir' / 'corpus.jsonl'}:1"
        assert idx.get_document("a.md").source == str(root / "a.md")  # was "link/a.md"

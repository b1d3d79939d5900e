"""Another index folder under a root is skipped, a file link into the roots is read once
(as its target), and files too large to load are named by the id they would have had."""

from __future__ import annotations

import json
from pathlib import Path

import ctxselect as cs
from ctxselect.ingest import load_paths
from ctxselect.ingest.rescan import left_out


def test_another_index_folder_under_a_root_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n\nalpha\n")
    cs.index_paths([root / "docs"], root / "idx")  # a real index, inside the next root
    result = load_paths(root)
    assert [d.doc_id for d in result.documents] == ["docs/a.md"]
    assert result.report.unsupported_paths == ()
    assert result.report.ignored == 1
    found = left_out(str(root / "idx" / "index.sqlite"), [str(root)])
    assert found == f"{root / 'idx'} is a ctxselect index folder, which holds no documents"


def test_a_folder_with_only_one_of_the_index_files_is_walked(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "index.sqlite").write_bytes(b"SQLite format 3\x00")
    (tmp_path / "data" / "notes.md").write_text("notes\n")
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["data/notes.md"]
    assert result.report.unsupported_paths == (str(tmp_path / "data" / "index.sqlite"),)


def test_a_file_link_to_a_file_inside_the_roots_loads_the_target_once(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "real.md").write_text("alpha\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "a" / "real.md")
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["a/real.md"]
    assert result.report.ignored == 1
    why = left_out(str(tmp_path / "link.md"), [str(tmp_path)])
    assert why.startswith(f"it is a symlink to {tmp_path / 'a' / 'real.md'}, inside the roots")


def test_a_file_link_out_of_the_roots_still_loads_when_followed(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "far.md").write_text("far\n")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link.md").symlink_to(tmp_path / "out" / "far.md")
    result = load_paths(tmp_path / "root", follow_symlinks=True)
    assert [d.doc_id for d in result.documents] == ["link.md"]


def test_files_and_records_too_large_are_named_by_their_ids(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("word " * 100)
    (tmp_path / "sub").mkdir()
    lines = [{"_id": "d1", "text": "short"}, {"_id": 7, "text": "long " * 100}]
    (tmp_path / "sub" / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "sub" / "queries.jsonl").write_text("")
    report = load_paths(tmp_path, max_bytes=200).report
    assert report.too_large == 2
    assert report.too_large_ids == ("7", "big.txt")

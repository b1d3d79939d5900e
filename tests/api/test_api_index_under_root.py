"""An index folder inside one of its own roots is never scanned: not listed, never indexed.

Every write changes the index folder, so a scan that entered it would report its files
(``index.sqlite``, ``write.lock``, array files) as unsupported on every run, and a watch
would see a change after each of its own runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.ingest import load_paths


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha words\n", encoding="utf-8")
    (root / "b.py").write_text("def beta():\n    return 1\n", encoding="utf-8")
    return root


def _index_files(report: cs.IndexReport, folder: Path) -> list[str]:
    """Paths inside ``folder`` that the report names anywhere."""
    named = [*report.unsupported_files, *(p for p, _ in report.skipped_files)]
    named += [p for p, _ in report.unreadable]
    return [p for p in named if os.path.realpath(p).startswith(str(folder.resolve()))]


@pytest.mark.parametrize("name", ["idx", "index-data", "notes.md"])
def test_a_rescan_leaves_out_the_index_folder_whatever_its_name(tmp_path, name):
    root = _project(tmp_path / "proj")
    ix = root / name  # even a name that looks like a document
    first = cs.index_paths([root], ix)
    again = cs.index_paths([root], ix)
    rescan = cs.index_paths(None, ix)
    for report in (first, again, rescan):
        assert _index_files(report, ix) == []
        assert report.skipped["unsupported"] == 0
    assert (again.added, again.unchanged, rescan.unchanged) == (0, 2, 2)
    with cs.open_index(ix) as idx:
        assert set(idx.store.doc_hashes()) == {"a.md", "b.py"}


def test_the_index_folder_is_skipped_through_a_relative_path_and_a_link(tmp_path, monkeypatch):
    root = _project(tmp_path / "proj")
    cs.index_paths([root], root / "idx")
    (root / "link-to-idx").symlink_to(root / "idx")
    monkeypatch.chdir(root)
    report = cs.index_paths(["."], "link-to-idx")  # the same folder, named two other ways
    assert _index_files(report, root / "idx") == []
    assert report.skipped["unsupported"] == 0 and report.unchanged == 2


def test_add_of_a_folder_holding_the_index_leaves_the_index_out(tmp_path):
    root = _project(tmp_path / "proj")
    ix = root / "idx"
    cs.index_paths([root], ix)
    (root / "c.txt").write_text("gamma words", encoding="utf-8")
    report = cs.add_paths([root], ix)
    assert _index_files(report, ix) == [] and report.added == 1


def test_load_paths_skips_the_folders_it_is_told_to_and_counts_them_ignored(tmp_path):
    root = _project(tmp_path / "proj")
    (root / "keep").mkdir()
    (root / "keep" / "c.txt").write_text("gamma", encoding="utf-8")
    (root / "out").mkdir()
    (root / "out" / "d.txt").write_text("delta", encoding="utf-8")
    (root / "out-link").symlink_to(root / "out")
    plain = load_paths([root])
    skipped = load_paths([root], skip=[root / "out"])
    assert [d.doc_id for d in plain.documents] == ["a.md", "b.py", "keep/c.txt", "out/d.txt"]
    assert [d.doc_id for d in skipped.documents] == ["a.md", "b.py", "keep/c.txt"]
    # plain: the link to a folder walked already; skipped: the folder, then the link to it
    assert (plain.report.ignored, skipped.report.ignored) == (1, 2)
    assert load_paths([root], skip=[tmp_path / "absent"]).documents == plain.documents


def test_indexing_the_index_folder_itself_is_refused_and_removes_nothing(tmp_path):
    root = _project(tmp_path / "proj")
    ix = root / "idx"
    cs.index_paths([root], ix)
    for paths in ([ix], [ix / "arrays"], [root, ix]):
        with pytest.raises(cs.InputError, match=r"is the index folder .* nothing was changed"):
            cs.index_paths(paths, ix)
    with pytest.raises(cs.InputError, match=r"cannot add .*index\.sqlite.* is the index folder"):
        cs.add_paths([ix / "index.sqlite"], ix)
    assert cs.index_paths(None, ix).unchanged == 2  # the roots and documents are as they were

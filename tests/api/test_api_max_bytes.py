"""An index remembers the ``max_bytes`` it was written with, and a lower limit removes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.api.sync import read_manifest
from ctxselect.api.watch import watch_paths
from ctxselect.errors import ConfigError, IndexCorruptError
from ctxselect.ingest import DEFAULT_MAX_BYTES
from ctxselect.manifest import Manifest
from ctxselect.stores import open_store

BIG = "word " * 400  # 2,000 bytes


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "big.txt").write_text(BIG)
    (root / "small.txt").write_text("hello there\n")
    return root


def _ids(folder: Path) -> list[str]:
    store = open_store(str(folder))
    try:
        return sorted(store.doc_hashes())
    finally:
        store.close()


def _recorded(folder: Path) -> int | None:
    store = open_store(str(folder))
    try:
        return read_manifest(store).max_bytes
    finally:
        store.close()


def test_a_plain_rescan_uses_the_limit_the_index_was_written_with(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=3000)
    assert _recorded(folder) == 3000
    (root / "big.txt").write_text(BIG + "more ")  # changed: the re-scan must load it
    report = cs.index_paths(None, folder)  # no limit given: the index's own
    assert (report.updated, report.removed, report.skipped["too_large"]) == (1, 0, 0)
    assert _ids(folder) == ["big.txt", "small.txt"]


def test_a_new_limit_alone_is_recorded_and_the_report_says_so(tmp_path: Path) -> None:
    # it took a generation while the report said only "nothing changed: no work done"
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    first = cs.index_paths([root], folder)
    report = cs.index_paths(None, folder, max_bytes=1_000_000)
    assert (report.added, report.updated, report.removed, report.rebuilt) == (0, 0, 0, False)
    assert report.generation == first.generation + 1 and _recorded(folder) == 1_000_000
    assert report.note == "settings recorded: max_bytes 1,000,000, for the next re-scans"
    assert cs.index_paths(None, folder, max_bytes=1_000_000).note == ""  # nothing new


def test_a_lower_limit_keeps_the_indexed_version_and_says_so(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=3000)
    report = cs.index_paths(None, folder, max_bytes=1000)
    assert report.removed == 0 and report.skipped["too_large"] == 1
    assert "kept the indexed version of 1 document(s)" in report.note
    assert "big.txt" in report.note and "--max-bytes 1,000" in report.note
    assert _recorded(folder) == 1000  # a limit given is recorded, even when nothing changed
    again = cs.index_paths(None, folder)  # the recorded 1,000 applies: still kept
    assert again.removed == 0 and again.skipped["too_large"] == 1
    assert _ids(folder) == ["big.txt", "small.txt"]


def test_watch_keeps_a_document_added_with_a_higher_limit(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=3000)
    reports: list[cs.IndexReport] = []
    watch_paths(None, folder, interval=0.05, max_runs=1, on_report=reports.append)
    watch_paths(None, folder, interval=0.05, max_runs=1, on_report=reports.append, max_bytes=999)
    assert [r.removed for r in reports] == [0, 0]
    assert _ids(folder) == ["big.txt", "small.txt"]


def test_add_records_a_limit_given_and_uses_the_index_s_otherwise(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    (root / "big.txt").unlink()
    cs.index_paths([root], folder)
    assert _recorded(folder) == DEFAULT_MAX_BYTES  # the limit used is recorded
    (root / "big.txt").write_text(BIG)
    cs.add_paths([root / "big.txt"], folder, max_bytes=3000)
    assert _recorded(folder) == 3000
    assert cs.index_paths(None, folder).removed == 0


def test_a_bad_limit_is_refused_before_a_folder_is_made(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    for bad in (0, -5, 1.5, True, "big"):
        with pytest.raises(ConfigError, match="max_bytes must be a whole number of bytes"):
            cs.index_paths([root], folder, max_bytes=bad)  # type: ignore[arg-type]
    assert not folder.exists()


def test_the_manifest_reads_and_checks_max_bytes() -> None:
    assert Manifest.from_dict({"chunk": {}}).max_bytes is None  # written before the key
    assert Manifest.from_dict({"max_bytes": 60_000_000}).max_bytes == 60_000_000
    assert Manifest(max_bytes=7).to_dict()["max_bytes"] == 7
    with pytest.raises(IndexCorruptError, match="'max_bytes'"):
        Manifest.from_dict({"max_bytes": "big"})

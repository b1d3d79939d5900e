"""A document kept because its file grew above ``max_bytes`` counts as unchanged.

The re-scan gives no document for such a file, so the write plan leaves it out of every
count; the report must still add up: added + updated + unchanged = documents held.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

import ctxselect as cs
from ctxselect.interfaces.cli import commands, store  # noqa: F401  (registers `index`)
from ctxselect.interfaces.cli.main import cli

BIG = "word " * 400  # 2,000 bytes


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "big.txt").write_text("small for now\n")
    (root / "a.txt").write_text("hello there\n")
    (root / "b.txt").write_text("general kenobi\n")
    return root


def _adds_up(report: cs.IndexReport) -> bool:
    return report.added + report.updated + report.unchanged == report.documents


def test_a_kept_too_large_document_counts_as_unchanged(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=1000)
    (root / "big.txt").write_text(BIG)  # grown above the limit: its indexed version stays
    report = cs.index_paths(None, folder)
    assert report.skipped["too_large"] == 1 and "kept the indexed version" in report.note
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 3)
    assert _adds_up(report)


def test_it_counts_as_unchanged_when_other_files_changed_too(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=1000)
    (root / "big.txt").write_text(BIG)
    (root / "a.txt").write_text("hello again\n")
    report = cs.index_paths(None, folder)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 2)
    assert _adds_up(report)


def test_a_rebuild_counts_it_once_as_updated(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=1000)
    (root / "big.txt").write_text(BIG)
    report = cs.index_paths(None, folder, rebuild=True)  # rewrites it from the store
    assert (report.updated, report.unchanged) == (3, 0)
    assert _adds_up(report)


def test_the_cli_summary_counts_it_as_unchanged(tmp_path: Path) -> None:
    root, folder = _tree(tmp_path / "docs"), tmp_path / "ix"
    cs.index_paths([root], folder, max_bytes=1000)
    (root / "big.txt").write_text(BIG)
    result = CliRunner().invoke(cli, ["index", "--index", str(folder)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "3 documents, 3 chunks (0 added, 0 updated, 0 removed, 3 unchanged)" in result.stdout
    assert "skipped: 1 too large" in result.output

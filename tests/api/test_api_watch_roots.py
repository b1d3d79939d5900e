"""watch_paths: one run reads the index's recorded roots once, and scans what it read."""

from __future__ import annotations

from pathlib import Path

import ctxselect as cs
from ctxselect.api import watch


def _folder(path: Path, names: list[str]) -> Path:
    path.mkdir()
    for name in names:
        (path / name).write_text(f"{name} words", encoding="utf-8")
    return path


def test_a_run_scans_the_roots_it_read_when_another_process_changes_them(tmp_path, monkeypatch):
    mine = _folder(tmp_path / "mine", ["a.txt"])
    other = _folder(tmp_path / "other", ["x.txt", "y.txt", "z.txt"])
    ix = tmp_path / "ix"
    real, calls = watch.index_paths, []

    def index_paths(paths, index, **options):
        calls.append([str(p) for p in paths])
        if len(calls) == 2:  # after the watch read the roots: another process re-indexes
            real([other], index)
        return real(paths, index, **options)

    monkeypatch.setattr(watch, "index_paths", index_paths)
    reports: list[cs.IndexReport] = []

    def change_once(report: cs.IndexReport) -> None:
        reports.append(report)
        if len(reports) == 1:
            (mine / "b.txt").write_text("b words", encoding="utf-8")

    runs = cs.watch_paths(
        [mine], ix, interval=0.05, on_report=change_once, on_error=print, max_runs=2
    )
    assert runs == 2
    assert [r.documents for r in reports] == [1, 2]  # a.txt and b.txt: what it watched
    assert calls == [[str(mine)], [str(mine.resolve())]]  # the roots it read, not re-read
    with cs.open_index(ix) as idx:
        assert sorted(h.doc_id for h in idx.search("words", k=10)) == ["a.txt", "b.txt"]

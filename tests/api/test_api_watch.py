"""watch_paths: runs that fail in a way that may pass are reported and the watch goes on."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import ctxselect as cs
from ctxselect.api import watch
from ctxselect.errors import ConfigError, IndexCorruptError, IndexLockedError


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha apples", encoding="utf-8")
    return folder


def watch_three_runs(root, tmp_path, on_report, errors: list) -> int:
    """Watch ``root`` into ``tmp_path / "ix"`` for three runs, collecting passing errors."""
    return cs.watch_paths(
        [root],
        tmp_path / "ix",
        interval=0.05,
        on_report=on_report,
        on_error=errors.append,
        max_runs=3,
    )


def failing_on(monkeypatch, calls: dict[int, Exception]) -> list[int]:
    """Make index run number n (from 1) raise ``calls[n]``; the others run for real."""
    real, made = watch.index_paths, []

    def index_paths(*args, **kwargs):
        made.append(len(made) + 1)
        if len(made) in calls:
            raise calls[len(made)]
        return real(*args, **kwargs)

    monkeypatch.setattr(watch, "index_paths", index_paths)
    return made


def test_a_locked_index_is_reported_and_tried_again_at_the_next_interval(
    tmp_path, root, monkeypatch
):
    made = failing_on(monkeypatch, {2: IndexLockedError("another writer holds the lock")})
    (root / "b.txt").write_text("beta", encoding="utf-8")
    reports, errors = [], []

    def change_once(report):
        reports.append(report)
        if len(reports) == 1:
            (root / "c.txt").write_text("gamma", encoding="utf-8")

    runs = watch_three_runs(root, tmp_path, change_once, errors)
    assert runs == 3 and made == [1, 2, 3]
    assert [type(e) for e in errors] == [IndexLockedError]
    assert reports[1].added == 1 and reports[1].documents == 3  # the retry caught up


def test_a_root_briefly_gone_is_reported_and_the_watch_goes_on(tmp_path, root):
    away = tmp_path / "away"
    reports, errors = [], []

    def move_and_back(report):
        reports.append(report)

    def mover():
        time.sleep(0.3)
        root.rename(away)
        time.sleep(0.6)
        away.rename(root)
        (root / "b.txt").write_text("beta", encoding="utf-8")

    thread = threading.Thread(target=mover)
    thread.start()
    runs = watch_three_runs(root, tmp_path, move_and_back, errors)
    thread.join()
    assert runs == 3 and len(errors) == 1 and "no longer exists" in str(errors[0])
    assert [r.added for r in reports] == [1, 1] and reports[1].documents == 2


def test_an_error_that_cannot_pass_ends_the_watch(tmp_path, root, monkeypatch):
    failing_on(monkeypatch, {2: IndexCorruptError("the index is damaged")})
    (root / "a.txt").write_text("alpha", encoding="utf-8")

    def touch(_report):
        (root / "b.txt").write_text("beta", encoding="utf-8")

    with pytest.raises(IndexCorruptError, match="damaged"):
        cs.watch_paths([root], tmp_path / "ix", interval=0.05, on_report=touch, max_runs=5)


def test_a_missing_path_on_the_first_run_ends_the_watch(tmp_path):
    with pytest.raises(cs.InputError, match="does not exist"):
        cs.watch_paths([tmp_path / "nope"], tmp_path / "ix", interval=0.05, max_runs=3)


def test_the_default_error_channel_is_one_line_on_stderr(tmp_path, root, monkeypatch, capsys):
    failing_on(monkeypatch, {1: IndexLockedError("another writer holds the lock")})
    runs = cs.watch_paths([root], tmp_path / "ix", interval=0.05, max_runs=2)
    err = capsys.readouterr().err
    assert runs == 2 and err.count("\n") == 1 and "another writer holds the lock" in err


def test_one_str_path_is_watched_as_one_path(tmp_path, root, monkeypatch):
    monkeypatch.chdir(root.parent)
    reports: list[cs.IndexReport] = []

    def change_once(report):
        reports.append(report)
        if len(reports) == 1:
            (root / "b.txt").write_text("beta", encoding="utf-8")

    # a watch that misses the change would run forever: Ctrl-C it after 10 s
    timer = threading.Timer(10, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        runs = cs.watch_paths(
            "docs", tmp_path / "ix", interval=0.05, on_report=change_once, max_runs=2
        )
    finally:
        timer.cancel()
    assert runs == 2 and [r.added for r in reports] == [1, 1]


@pytest.mark.parametrize("max_runs", [0, -1, 1.5, True, "2"])
def test_max_runs_below_one_or_not_whole_is_refused(tmp_path, root, max_runs):
    with pytest.raises(ConfigError, match="max_runs must be a whole number"):
        cs.watch_paths([root], tmp_path / "ix", max_runs=max_runs)
    assert not (tmp_path / "ix").exists()


def test_an_edited_ignore_file_changes_the_fingerprint_other_hidden_files_do_not(tmp_path):
    from ctxselect.index.watch import fingerprint

    (tmp_path / "a.md").write_text("kept", encoding="utf-8")
    before = fingerprint([str(tmp_path)], skip="")
    (tmp_path / ".env").write_text("SECRET=1", encoding="utf-8")
    assert fingerprint([str(tmp_path)], skip="") == before  # hidden: not indexed anyway
    (tmp_path / ".ctxselectignore").write_text("a.md\n", encoding="utf-8")
    assert fingerprint([str(tmp_path)], skip="") != before  # the next run drops a.md

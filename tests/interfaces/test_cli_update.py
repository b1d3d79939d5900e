"""The update commands: add, remove, compact, verify, info, and index --watch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

from click.testing import CliRunner

import ctxselect as cs
from ctxselect.interfaces.cli.main import cli
from ctxselect.stores.embedded.sqlite import SCHEMA_VERSION


def run(*args: str):
    from ctxselect.interfaces.cli import commands, experiments, store  # noqa: F401

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_add_remove_compact_verify_info(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha apples", encoding="utf-8")
    ix = str(tmp_path / "ix")
    assert run("index", str(root), "--index", ix).exit_code == 0
    (root / "b.md").write_text("# B\n\nbeta bananas", encoding="utf-8")
    added = run("add", str(root / "b.md"), "--index", ix, "--json")
    assert added.exit_code == 0 and json.loads(added.output)["added"] == 1
    info = run("info", "--index", ix)
    assert "status = " in info.output and "documents = 2" in info.output
    removed = run("remove", "a.md", "--index", ix)
    assert removed.exit_code == 0 and "1 removed" in removed.output
    missing = run("remove", "nope.md", "--index", ix)
    assert missing.exit_code == 1 and "no document 'nope.md'" in missing.output
    compacted = run("compact", "--index", ix, "--json")
    assert compacted.exit_code == 0 and json.loads(compacted.output)["chunks"] >= 1
    verified = run("verify", "--index", ix, "--json")
    report = json.loads(verified.output)
    assert verified.exit_code == 0 and report["ok"] and "segments" in report["checks"]
    data = json.loads(run("info", "--index", ix, "--json").output)
    assert data["delta_segments"] == 0 and data["documents"] == 1
    assert data["schema_version"] == SCHEMA_VERSION == 4


def test_the_summary_says_up_to_date_only_when_nothing_waits_for_compaction(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(30):  # one edit is far below the compaction threshold
        (root / f"d{i:02}.md").write_text(f"# D{i}\n\ntopic {i} text", encoding="utf-8")
    ix = str(tmp_path / "ix")
    first = run("index", str(root), "--index", ix).output
    assert "status: up to date (compacted)" in first
    (root / "d05.md").write_text("# D5\n\nedited text", encoding="utf-8")
    edited = run("index", str(root), "--index", ix).output
    assert "1 updated" in edited and "up to date" not in edited
    assert "status: changes kept in 1 delta segment(s), pending compaction" in edited
    text = run("info", "--index", ix).output  # info shows the generation and its deltas
    assert "\ngeneration = 2 (1 delta segment(s))\n" in text
    run("compact", "--index", ix)
    removed = run("remove", "d07.md", "--index", ix).output
    assert "1 removed" in removed and "up to date" not in removed
    assert "status: removed chunks stay as deleted rows, pending compaction" in removed
    info = json.loads(run("info", "--index", ix, "--json").output)
    assert info["deleted_rows"] == 1 and info["delta_segments"] == 0


def test_add_refuses_a_named_file_the_next_re_scan_would_drop_and_skips_walked_ones(tmp_path):
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / ".gitignore").write_text("# build output\n*.txt\n", encoding="utf-8")
    (root / "a.md").write_text("# A\n\nalpha apples", encoding="utf-8")
    ix = str(tmp_path / "ix")
    assert run("index", str(root), "--index", ix).exit_code == 0
    (root / "notes.txt").write_text("ignored emu", encoding="utf-8")
    (root / ".hidden.md").write_text("hidden emu", encoding="utf-8")
    (root / "sub" / "b.md").write_text("# B\n\nbeta", encoding="utf-8")
    (root / "sub" / "c.txt").write_text("ignored too", encoding="utf-8")
    cases = {
        "notes.txt": f"the pattern '*.txt' in {root / '.gitignore'} line 2 ignores it; remove",
        ".hidden.md": "the name '.hidden.md' is hidden (it starts with a dot); rename it",
    }
    for name, why in cases.items():  # named: refused, one line
        result = CliRunner().invoke(cli, ["add", str(root / name), "--index", ix])
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.output
        assert "would leave it out and remove it again, so nothing was added" in result.stderr
        assert why in result.stderr
    assert json.loads(run("info", "--index", ix, "--json").output)["documents"] == 1
    # met by walking a named folder: left out, as the re-scan leaves it out, and said so
    added = run("add", str(root / "sub"), "--index", ix)
    assert "1 added" in added.output
    assert f"{root / 'sub' / 'c.txt'} (a re-scan leaves it out: the pattern '*.txt'" in added.output
    assert json.loads(run("info", "--index", ix, "--json").output)["documents"] == 2
    assert run("index", "--index", ix).output.count("0 removed") == 1  # the re-scan agrees


def test_verify_exits_1_with_the_reason_when_damaged(tmp_path):
    ix = tmp_path / "ix"
    cs.add_documents([cs.Document("a", "alpha", content_hash="a")], ix)
    with cs.open_index(ix) as idx:  # a chunk whose text no longer matches its document
        idx.store._conn.execute("UPDATE chunks SET text = 'tampered'")
    result = run("verify", "--index", str(ix))
    assert result.exit_code == 1
    assert "offsets or text do not match" in result.output


def test_watch_picks_up_changes_and_ctrl_c_ends_it(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("alpha apples", encoding="utf-8")
    ix = tmp_path / "ix"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxselect",
            "index",
            str(root),
            "--index",
            str(ix),
            "--watch",
            "--interval",
            "0.1",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    assert first["added"] == 1
    time.sleep(0.05)
    (root / "b.txt").write_text("beta bananas", encoding="utf-8")
    second = json.loads(proc.stdout.readline())
    assert second["added"] == 1 and second["documents"] == 2
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped watching after 2 index run(s)" in err
    assert "Traceback" not in err


def test_watch_paths_runs_again_only_on_changes(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("alpha", encoding="utf-8")
    reports: list[cs.IndexReport] = []

    def touch_later() -> None:
        time.sleep(0.3)
        (root / "a.txt").write_text("alpha again", encoding="utf-8")
        os.utime(root / "a.txt", (time.time() + 5, time.time() + 5))

    threading.Thread(target=touch_later).start()
    runs = cs.watch_paths(
        [root], tmp_path / "ix", interval=0.05, on_report=reports.append, max_runs=2
    )
    assert runs == 2 and [r.added for r in reports] == [1, 0] and reports[1].updated == 1


def test_watch_reports_a_locked_run_on_stderr_and_goes_on(tmp_path, monkeypatch):
    from ctxselect.api import watch
    from ctxselect.errors import IndexLockedError
    from ctxselect.interfaces.cli import indexing

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("alpha apples", encoding="utf-8")
    real_index, real_watch, calls = watch.index_paths, indexing.watch_paths, []

    def locked_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise IndexLockedError("index is locked by process 4242: another writer")
        return real_index(*args, **kwargs)

    monkeypatch.setattr(watch, "index_paths", locked_once)
    monkeypatch.setattr(indexing, "watch_paths", lambda *a, **kw: real_watch(*a, max_runs=2, **kw))
    result = CliRunner().invoke(
        cli, ["index", str(root), "--index", str(tmp_path / "ix"), "--watch", "--interval", "0.05"]
    )
    assert result.exit_code == 0, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "locked by process 4242" in errors[0] and "watching on" in errors[0]
    assert "stopped watching after 2 index run(s)" in result.stderr and "1 added" in result.stdout

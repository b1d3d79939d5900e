"""``index --watch`` on a Milvus index: the URI is kept as given, not made a path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from store_kinds import milvus_uri

import ctxselect as cs
from ctxselect.api.watch import _index_location


def test_a_uri_is_not_made_a_path_and_no_folder_is_skipped(tmp_path: Path) -> None:
    uri = "milvus://127.0.0.1:19530/notes"
    assert _index_location(uri) == (uri, "")
    folder = os.path.abspath("rel/ix")
    assert _index_location("rel/ix") == (folder, folder)
    assert _index_location((tmp_path / "ix").as_uri()) == (str(tmp_path / "ix"),) * 2


def test_watch_paths_keeps_a_milvus_index_current(milvus_server: Any, tmp_path: Path) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("alpha cache eviction", encoding="utf-8")
    reports: list[cs.IndexReport] = []

    def changed_after_first(report: cs.IndexReport) -> None:
        reports.append(report)
        if len(reports) == 1:  # after the first run: a Milvus commit takes a while
            (root / "a.txt").write_text("alpha again, now about retries", encoding="utf-8")
            os.utime(root / "a.txt", (time.time() + 5, time.time() + 5))

    runs = cs.watch_paths([root], uri, interval=0.05, on_report=changed_after_first, max_runs=2)
    assert runs == 2 and [r.added for r in reports] == [1, 0] and reports[1].updated == 1
    with cs.open_index(uri) as idx:
        assert [h.doc_id for h in idx.search("retries", 1)] == ["a.txt"]


def test_the_cli_watches_a_milvus_index(milvus_server: Any, tmp_path: Path) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "b.txt").write_text("bravo lease renewal", encoding="utf-8")
    argv = ["index", str(root), "--index", uri, "--watch", "--interval", "0.1", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxselect", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["added"] == 1
        (root / "c.txt").write_text("charlie generation flip", encoding="utf-8")
        second = json.loads(proc.stdout.readline())
        assert second["added"] == 1 and second["documents"] == 2
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped watching after 2 index run(s)" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]  # no folder named after it
    with cs.open_index(uri) as idx:
        assert [h.doc_id for h in idx.search("generation flip", 1)] == ["c.txt"]

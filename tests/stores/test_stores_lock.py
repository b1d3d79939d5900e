"""The writer lock: one writer at a time, a clear message naming the holder, stale locks ignored."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxselect.errors import IndexLockedError
from ctxselect.stores.embedded.lock import LOCK_NAME, WriterLock, describe_holder, short_command

HOLD = """
import sys, time
from ctxselect.stores.embedded.lock import WriterLock
lock = WriterLock(sys.argv[1]); lock.acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
"""


def _holder(folder: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_told_which_process_holds_the_lock(tmp_path):
    proc = _holder(tmp_path, 30)
    try:
        with pytest.raises(IndexLockedError) as info:
            WriterLock(tmp_path).acquire()
        message = str(info.value)
        assert f"process {proc.pid} (" in message and "-c" in message
        assert "--wait SECONDS" in message and "searches still work" in message
    finally:
        proc.kill()
        proc.wait()


def test_waiting_takes_the_lock_once_the_holder_lets_go(tmp_path):
    proc = _holder(tmp_path, 0.5)
    started = time.monotonic()
    with WriterLock(tmp_path, wait=20) as lock:
        assert lock.held and time.monotonic() - started >= 0.2
        assert describe_holder(tmp_path / LOCK_NAME).startswith(f"process {os.getpid()}")
    proc.wait()


def test_waiting_too_short_still_fails_clearly(tmp_path):
    proc = _holder(tmp_path, 30)
    try:
        with pytest.raises(IndexLockedError, match=r"after waiting 0\.2 s"):
            WriterLock(tmp_path, wait=0.2).acquire()
    finally:
        proc.kill()
        proc.wait()


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path):
    proc = _holder(tmp_path, 30)
    proc.kill()  # SIGKILL: no chance to release; the kernel drops the flock
    proc.wait()
    assert (tmp_path / LOCK_NAME).read_text().startswith(str(proc.pid))  # stale content
    with WriterLock(tmp_path) as lock:
        assert lock.held


def test_release_is_idempotent_and_frees_the_lock(tmp_path):
    first = WriterLock(tmp_path)
    first.acquire()
    with pytest.raises(IndexLockedError):
        WriterLock(tmp_path).acquire()  # another open file: flock conflicts in one process too
    first.release()
    first.release()
    with WriterLock(tmp_path):
        pass


def test_the_holder_of_a_long_command_is_named_in_one_short_line(tmp_path):
    files = [f"notes/a-rather-long-file-name-{i:04}.md" for i in range(2000)]
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path), "30", *files],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        with pytest.raises(IndexLockedError) as info:
            WriterLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait()
    holder = describe_holder(tmp_path / LOCK_NAME)
    assert holder.startswith(f"process {proc.pid} (-c ") and holder.endswith("(2,002 args))")
    assert len(holder) <= 130 and holder in str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_short_command_keeps_short_ones_and_cuts_between_arguments():
    assert short_command(["/usr/bin/ctxselect", "add", "a.md"]) == "ctxselect add a.md"
    long = short_command(["ctxselect", "add", *(f"f{i}.md" for i in range(500))], limit=60)
    assert long.startswith("ctxselect add f0.md f1.md") and long.endswith(".md … (501 args)")
    assert len(long) <= 60
    assert short_command(["x", "a\nb\x00c"]) == "x a?b?c"


def test_an_old_lock_file_with_a_huge_command_is_cut(tmp_path):
    (tmp_path / LOCK_NAME).write_text("42\nctxselect add " + "x.md " * 20_000 + "\n")
    holder = describe_holder(tmp_path / LOCK_NAME)
    assert holder.startswith("process 42 (ctxselect add x.md") and len(holder) <= 120


def test_a_command_that_is_not_utf8_does_not_break_the_lock(tmp_path):
    script = HOLD.replace("import sys, time", "import sys, time; sys.argv.append('bad\\udcff.md')")
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path), "30"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        with pytest.raises(IndexLockedError, match=r"bad\\udcff\.md"):
            WriterLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait()

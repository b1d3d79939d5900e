"""A failed first write undoes its new index without harming a writer that waits on it.

The first write into a new folder fails (its workers never start) while a second
process has opened the same new index and waits for its writer lock. The undo must not
delete what the second writer then writes, nor a file another process put in the folder.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import ctxselect as cs
from _support.failing_writes import FailingExecutor, three_notes
from ctxselect.api import write_session
from ctxselect.errors import IndexWriteError, WorkerError
from ctxselect.stores.embedded import lock
from ctxselect.stores.embedded.lock import WriterLock

# The second writer: notes (in a marker file) that it has opened the index and is about
# to wait for the lock, then adds one document.
WAITER = """
import sys, pathlib
from ctxselect.stores.embedded import lock
acquire = lock.WriterLock.acquire
def noted(self):
    pathlib.Path(sys.argv[2]).touch()
    acquire(self)
lock.WriterLock.acquire = noted
import ctxselect as cs
report = cs.add_documents([cs.Document("b1", "gamma delta epsilon")], sys.argv[1], wait=30)
print("added", report.added, flush=True)
"""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return three_notes(tmp_path)


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate()
            pytest.fail(f"the second writer never waited for the lock: {out}\n{err}")
        time.sleep(0.02)


def test_a_writer_waiting_on_a_failed_new_index_keeps_what_it_writes(corpus, tmp_path):
    ix, marker = tmp_path / "ix", tmp_path / "waiting"
    procs: list[subprocess.Popen[str]] = []

    def start_waiter() -> None:  # runs while this failed first write holds the lock
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WAITER, str(ix), str(marker)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        _wait_for(marker, procs[0])
        time.sleep(0.3)  # let it open the lock file and start waiting

    with pytest.raises(WorkerError):
        cs.index_paths([corpus], ix, executor=FailingExecutor(start_waiter))
    out, err = procs[0].communicate(timeout=60)
    assert procs[0].returncode == 0, err
    assert out.split() == ["added", "1"]
    with cs.open_index(ix) as idx:  # what the second writer wrote is there, once
        assert idx.info().documents == 1
        assert [h.doc_id for h in idx.search("gamma", k=3)] == ["b1"]


def test_the_undo_keeps_files_another_process_put_in_the_new_folder(corpus, tmp_path):
    ix = tmp_path / "ix"

    def put_files() -> None:  # an eval index made beside it, a user's note
        (ix / "eval").mkdir()
        (ix / "eval" / "run.json").write_text("{}", encoding="utf-8")
        (ix / "notes.txt").write_text("kept", encoding="utf-8")

    with pytest.raises(WorkerError):
        cs.index_paths([corpus], ix, executor=FailingExecutor(put_files))
    assert sorted(p.name for p in ix.iterdir()) == ["eval", "notes.txt"]
    assert (ix / "eval" / "run.json").read_text(encoding="utf-8") == "{}"


def test_a_writer_whose_lock_file_was_replaced_is_no_longer_current(tmp_path):
    ix = tmp_path / "ix"
    cs.add_documents([cs.Document("a", "alpha")], ix)
    opened = write_session.open_for_write(str(ix), 0.0, create=False, before_create=print)
    assert opened is not None
    try:
        assert opened.current()
        with WriterLock(ix):  # a failed first write removes the lock file it holds
            (ix / "write.lock").unlink()
            (ix / "write.lock").touch()  # and a later writer makes a new one
        assert not opened.current()
    finally:
        opened.store.close()


def test_an_index_removed_again_and_again_is_refused_with_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(write_session, "open_for_write", lambda *a, **k: None)
    with pytest.raises(IndexWriteError, match=r"was removed 5 times while this write waited"):
        cs.add_documents([cs.Document("a", "alpha")], tmp_path / "ix")


def test_the_files_an_undo_removes_are_the_folder_stores_own():
    from ctxselect.stores.embedded import files, opening

    assert write_session.INDEX_FILE == opening.FILE_NAME
    assert write_session.LOCK_FILE == lock.LOCK_NAME
    assert write_session.ARRAYS_DIR == files.ARRAYS_DIR

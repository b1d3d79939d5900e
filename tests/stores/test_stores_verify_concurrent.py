"""verify beside a running writer: it reads one committed generation, and a writer's own
temporary files are not called stray; a transaction SQLite rolled back itself keeps its error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.stores.embedded import verify
from ctxselect.stores.embedded.lock import WriterLock
from ctxselect.stores.embedded.sqlite import SQLiteStore
from ctxselect.types import Document


def _index(tmp_path: Path) -> Path:
    folder = tmp_path / "ix"
    docs = [Document(f"d{i}", f"clock domain crossing note {i} " * 20) for i in range(8)]
    cs.add_documents(docs, folder)
    return folder


def test_a_commit_during_verify_is_not_seen_half_way(tmp_path, monkeypatch):
    """Another writer commits between verify's manifest read and its later checks: the
    checks still agree with each other (they read the generation the manifest named)."""
    folder = _index(tmp_path)
    counts = verify._counts
    committed = []

    def commit_then_count(store, manifest):
        if not committed:  # the other writer commits a new generation now
            new = [Document(f"n{i}", f"metastability late note {i} " * 30) for i in range(5)]
            cs.add_documents(new, folder)
            committed.append(True)
        return counts(store, manifest)

    monkeypatch.setattr(verify, "_counts", commit_then_count)
    report = cs.verify_index(folder)
    assert committed and report.ok, report.problems
    with cs.open_index(folder) as idx:
        assert idx.info().documents == 13  # the commit did land


def test_a_running_writers_temporary_file_is_not_stray(tmp_path):
    folder = _index(tmp_path)
    own_tmp = folder / "arrays" / "base-000099-0123abcd.bin.tmp"
    own_tmp.write_bytes(b"half-written by a writer")
    with WriterLock(folder):  # a writer is running: its file is neither stray nor removed
        report = cs.verify_index(folder)
        assert report.ok and not report.removed, report.problems
        assert own_tmp.exists()
    report = cs.verify_index(folder)  # nobody writes now: a leftover, removed
    assert report.ok and report.removed == ("arrays/base-000099-0123abcd.bin.tmp",)
    assert not own_tmp.exists()


def test_a_transaction_sqlite_rolled_back_itself_keeps_its_error(tmp_path):
    """On a full disk SQLite may roll the transaction back itself (seen on a 2 MB tmpfs);
    the error that reaches the caller is that one, not a failed second ROLLBACK."""
    folder = _index(tmp_path)
    store = SQLiteStore(folder)
    try:
        with pytest.raises(sqlite3.OperationalError, match="disk is full"), store.transaction():
            store._conn.execute("ROLLBACK")  # what SQLite did on SQLITE_FULL
            raise sqlite3.OperationalError("database or disk is full")
        assert not store._conn.in_transaction
        with store.transaction():  # the store still writes
            store._conn.execute("CREATE TABLE later (x INTEGER)")
    finally:
        store.close()

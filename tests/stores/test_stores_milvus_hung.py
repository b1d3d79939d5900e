"""A Milvus server that stops answering without closing its connections (SIGSTOP).

Every call path of the store (connect, the store's reads, a snapshot's lazy reads,
served searches, the vector cache, writes, compaction, verify) ends within the call
deadline (``CTXSELECT_MILVUS_TIMEOUT``, 2 s here) in the store's one-line
``StoreUnreachableError`` naming the index URI, never a raw gRPC deadline or a
``MilvusException``. After SIGCONT the index is as it was: the same generation and
documents, a clean ``verify`` that removes the interrupted write's rows, and a re-run
of the write adds each chunk once. A store used after ``close()`` says it was closed.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxselect as cs
from _support.milvus_reads import lazy_reads
from ctxselect.errors import CtxselectError, StoreUnreachableError
from ctxselect.ingest import content_hash
from ctxselect.stores import open_store
from ctxselect.stores.milvus import calls
from ctxselect.stores.milvus.lazy import MilvusLazyRows
from ctxselect.stores.milvus.server import MilvusServer
from ctxselect.stores.milvus.store import MilvusStore
from ctxselect.types import Document

DEADLINE = 2.0
SPEC = cs.ChunkSpec(chunker="paragraph", size=24, tokenizer="chars4")
TEXTS = {
    "cache.md": "The cache evicts old entries.\n\nEviction runs when memory runs low.",
    "retry.md": "Failed requests are retried.\n\nBackoff grows with every retry.",
}


def _docs(texts: dict[str, str]) -> list[Document]:
    return [Document(d, t, source=d, content_hash=content_hash("", t)) for d, t in texts.items()]


def _one_line(exc: BaseException, uri: str) -> str:
    text = str(exc)
    assert isinstance(exc, StoreUnreachableError), repr(exc)
    assert "\n" not in text and f"index {uri} " in text, text
    assert f"no answer within {DEADLINE:g} s" in text and "resume it" in text, text
    return text


@pytest.fixture()
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MilvusServer]:
    """A server of its own (it is stopped and resumed), with a 2-second call deadline."""
    monkeypatch.setenv(calls.TIMEOUT_ENV, str(DEADLINE))
    with MilvusServer(tmp_path / "srv") as running:
        yield running
    assert running.process is None


def _pause(server: MilvusServer) -> None:
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)


def _resume(server: MilvusServer) -> None:
    if server.process is not None:
        os.kill(server.process.pid, signal.SIGCONT)


def _answering(read: Callable[[], Any], within: float = 60.0) -> Any:
    """``read()`` once the resumed server has worked off the calls queued while it was
    stopped (on a loaded machine that can take longer than one call deadline)."""
    given_up = time.monotonic() + within
    while True:
        try:
            return read()
        except StoreUnreachableError:
            if time.monotonic() > given_up:
                raise
            time.sleep(0.5)


def _timed(read: Callable[[], Any]) -> tuple[str, float]:
    started = time.monotonic()
    try:
        read()
    except StoreUnreachableError as exc:
        return str(exc), time.monotonic() - started
    except Exception as exc:  # named in the caller's assertion: a path that leaks
        return f"{type(exc).__name__}: {exc}", time.monotonic() - started
    return "no error", time.monotonic() - started


def test_every_read_of_a_hung_server_is_one_line_within_the_deadline(server: MilvusServer) -> None:
    uri = f"{server.uri}/hung"
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, embedder="hash")
    store = open_store(uri)
    assert isinstance(store, MilvusStore)
    snap = store.snapshot(eager=False)
    rows = snap.rows
    assert isinstance(rows, MilvusLazyRows)
    arrays = next(seg.base for seg in snap.segments.values())
    searcher = store.searcher("bm25", snap, None)
    reads: dict[str, Callable[[], Any]] = {
        "open": lambda: open_store(uri),
        "data_version": store.data_version,
        "counts": store.counts,
        "get_chunk": lambda: store.get_chunk("cache.md#0"),
        "lazy chunk": lambda: rows.chunk(0),
        "lazy doc ids": rows.all_doc_ids,
        "lazy array": lambda: [arrays[name] for name in arrays],
        "served search": lambda: searcher.search("cache"),
        "vector cache": lambda: store.vector_cache().get_many("hash", ["x"]),
        "verify": store.verify,
        "snapshot": store.snapshot,
    }
    _pause(server)
    try:
        found = {name: _timed(read) for name, read in reads.items()}
    finally:
        _resume(server)
    for name, (text, seconds) in found.items():
        assert "cannot reach the Milvus server" in text, (name, text)
        assert seconds < 3 * DEADLINE + 2, (name, seconds)
    assert found["open"][1] < 1.5 * DEADLINE, found["open"]  # connecting is not retried
    with pytest.raises(StoreUnreachableError) as caught:
        _pause(server)
        try:
            store.get_document("cache.md")
        finally:
            _resume(server)
    _one_line(caught.value, uri)
    chunk = _answering(lambda: store.get_chunk("cache.md#0"))  # answers again
    assert chunk.text == "The cache evicts old entries."
    store.close()


def test_a_write_to_a_hung_server_leaves_the_index_as_it_was(
    server: MilvusServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"{server.uri}/hung_write"
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, embedder="hash")
    original = MilvusStore._insert

    def stopped_first(self: MilvusStore, collection: str, rows: Any, upsert: bool) -> None:
        if collection == self.address.name:  # after the tombs, documents and arrays
            _pause(server)
        original(self, collection, rows, upsert)

    monkeypatch.setattr(MilvusStore, "_insert", stopped_first)
    changed = {"cache.md": "The cache keeps new entries.", "queue.md": "Queues hold jobs."}
    started = time.monotonic()
    try:
        with pytest.raises(StoreUnreachableError) as caught:
            cs.add_documents(_docs(changed), uri, compact_fraction=None)
    finally:
        _resume(server)
    monkeypatch.undo()
    assert time.monotonic() - started < 4 * DEADLINE + 5
    text = _one_line(caught.value, uri)
    assert "the last committed generation is kept" in text
    report = cs.verify_index(uri)  # resumed: the same generation, the leftovers removed
    assert report.ok, report
    store = open_store(uri)
    try:
        assert store.generation() == 1
        assert store.doc_hashes().keys() == set(TEXTS)
        assert store.get_document("cache.md").text == TEXTS["cache.md"]
        assert store.verify()[1:] == ([], [])  # nothing left to remove
    finally:
        store.close()
    again = cs.add_documents(_docs(changed), uri, compact_fraction=None)  # no lease in the way
    assert (again.added, again.updated, again.generation) == (1, 1, 2)
    with cs.open_index(uri) as idx:
        ids = [c.chunk_id for c in idx.store.iter_chunks()]
        assert ids == sorted(set(ids)) and "queue.md#0" in ids
        assert idx.search("queues jobs", 1)[0].doc_id == "queue.md"


def test_a_compaction_on_a_hung_server_is_one_line(
    server: MilvusServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"{server.uri}/hung_compact"
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC)
    cs.add_documents(_docs({"queue.md": "Queues hold jobs."}), uri, compact_fraction=None)
    original = MilvusStore._put_meta

    def stopped_first(self: MilvusStore, rows: Any, upsert: bool = False) -> None:
        if any(r["kind"] == "blob" for r in rows):  # the new base's arrays
            _pause(server)
        original(self, rows, upsert)

    monkeypatch.setattr(MilvusStore, "_put_meta", stopped_first)
    try:
        with pytest.raises(StoreUnreachableError) as caught:
            cs.compact_index(uri)
    finally:
        _resume(server)
    monkeypatch.undo()
    _one_line(caught.value, uri)
    assert cs.verify_index(uri).ok
    with cs.open_index(uri) as idx:
        assert idx.store.generation() == 2
        assert idx.search("queues jobs", 1)[0].doc_id == "queue.md"
    assert cs.compact_index(uri).merged_segments == 1
    store = open_store(uri)
    try:
        assert store.generation() == 3 and store.read_manifest()["segments"] == []
    finally:
        store.close()


def test_a_server_hung_during_verify_is_unreachable_not_damage(
    server: MilvusServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"{server.uri}/hung_verify"
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC)
    original = MilvusStore.snapshot

    def stopped_meanwhile(self: MilvusStore, *args: Any, **kwargs: Any) -> Any:
        _pause(server)  # only while verify reads the snapshot: the rest of it answers
        try:
            return original(self, *args, **kwargs)
        finally:
            _resume(server)

    monkeypatch.setattr(MilvusStore, "snapshot", stopped_meanwhile)
    store = open_store(uri)
    try:
        with pytest.raises(StoreUnreachableError) as caught:
            store.verify()  # not a report of damage
    finally:
        _resume(server)
        store.close()
    _one_line(caught.value, uri)


def test_a_bad_timeout_setting_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("soon", "0", "-1", "inf"):
        monkeypatch.setenv(calls.TIMEOUT_ENV, bad)
        with pytest.raises(cs.ConfigError, match=f"{calls.TIMEOUT_ENV}=.* seconds above 0"):
            open_store("milvus://127.0.0.1:9/notes")


def test_lazy_reads_after_close_say_the_store_was_closed(milvus_server: Any) -> None:
    uri = f"{milvus_server.uri}/closed_lazy"
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, embedder="hash")
    store = open_store(uri)
    snap = store.snapshot(eager=False)
    rows = snap.rows
    assert isinstance(rows, MilvusLazyRows)
    arrays = next(seg.base for seg in snap.segments.values())
    searcher = store.searcher("bm25", snap, None)
    store.close()
    reads: dict[str, Callable[[], Any]] = {
        **lazy_reads(rows, arrays),
        "vector cache get": lambda: store.vector_cache().get_many("hash", ["x"]),
        "vector cache put": lambda: store.vector_cache().put_many("hash", {}),
        "served search": lambda: searcher.search("cache"),
        "commit": lambda: store.commit_settings({}),
    }
    raised = {}
    for name, read in reads.items():
        try:
            read()
            raised[name] = "no error"
        except CtxselectError as exc:
            raised[name] = str(exc)
        except Exception as exc:  # named in the assertion below
            raised[name] = f"{type(exc).__name__}: {exc}"
    closed = f"index {uri} was closed: open it again with open_index"
    assert raised == dict.fromkeys(reads, closed)

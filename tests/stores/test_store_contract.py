"""The Store contract: what every store behind ``open_store`` must do, checked per store.

Runs against every implementation in ``store_kinds.STORE_KINDS`` (the embedded store and
the Milvus store on a local server); a new store appends itself there and passes this
suite unchanged. Documents go in through the public write path (``add_documents``,
``remove_documents``, ``compact_index``) and the ``commit_*`` methods; everything is
read back through the :class:`~ctxselect.stores.Store` protocol only.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from store_kinds import STORE_KINDS, StoreKind
from store_reader import DOC_IDS, read_once

import ctxselect as cs
from ctxselect.errors import (
    CtxselectError,
    IndexLockedError,
    IndexNotFoundError,
    IndexWriteError,
    NotFoundError,
)
from ctxselect.ingest import content_hash
from ctxselect.stores import Store, VectorStore, open_store
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=8, tokenizer="chars4")  # a chunk a paragraph
READER = Path(__file__).with_name("store_reader.py")


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id, text, source=doc_id, content_hash=content_hash("", text))


def _round(i: int) -> list[Document]:
    """Round ``i`` of the writer: both documents of ``DOC_IDS``, every paragraph tagged."""
    return [
        _doc(d, "\n\n".join(f"v{i} {d} paragraph {p} words" for p in range(3))) for d in DOC_IDS
    ]


@pytest.fixture(params=STORE_KINDS, ids=lambda kind: kind.name)
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind: StoreKind = request.param
    return kind.new_uri(tmp_path, *(request.getfixturevalue(f) for f in kind.fixtures))


@pytest.fixture
def store(uri: str) -> Iterator[Store]:
    """A store holding documents a, b, c (one committed generation)."""
    docs = [_doc("a", "alpha one\n\nalpha two"), _doc("b", "beta one"), _doc("c", "gamma one")]
    cs.add_documents(docs, uri, chunk=SPEC, compact_fraction=None)
    opened = open_store(uri)
    yield opened
    opened.close()


def _live_texts(store: Store) -> dict[str, str]:
    """chunk_id -> text of every live row of the last committed snapshot."""
    rows = store.snapshot(eager=True).rows
    return {cid: rows.hit(row, 1, 0.0).text for cid, row in rows.row_of.items()}


def test_a_new_store_is_empty_and_a_missing_one_is_not_created(uri: str) -> None:
    with pytest.raises(IndexNotFoundError):
        open_store(uri)
    store = open_store(uri, create=True)
    try:
        assert isinstance(store, Store)
        assert store.generation() == 0
        assert store.counts() == {"documents": 0, "chunks": 0, "tokens": 0}
        assert store.doc_hashes() == {} and list(store.iter_chunks()) == []
        with pytest.raises(IndexNotFoundError):
            store.snapshot()
    finally:
        store.close()


def test_the_uri_opens_the_same_index_again(store: Store) -> None:
    again = open_store(store.uri)
    try:
        assert again.generation() == store.generation() == 1
        assert again.doc_hashes() == store.doc_hashes() and len(store.doc_hashes()) == 3
        assert again.schema_version == store.schema_version
    finally:
        again.close()


def test_reads_agree_with_what_was_written(store: Store) -> None:
    table = store.chunk_table()
    chunks = list(store.iter_chunks())
    assert [c.chunk_id for c in chunks] == list(table.chunk_ids) == sorted(table.chunk_ids)
    assert {c.doc_id for c in chunks} == {"a", "b", "c"}
    for chunk in chunks:
        doc = store.get_document(chunk.doc_id)
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert store.span_text(chunk.doc_id, chunk.start, chunk.end) == chunk.text
        assert store.get_chunk(chunk.chunk_id) == chunk
    assert store.get_document("a").text == "alpha one\n\nalpha two"
    assert store.span_text("a", 6, 15) == "one\n\nalph"
    assert sorted(c.chunk_id for c in store.chunks_of(["a", "nope"])) == ["a#0", "a#1"]
    assert store.doc_hashes(["b"]) == {"b": content_hash("", "beta one")}
    assert _live_texts(store) == dict(zip(table.chunk_ids, table.texts, strict=True))
    counts = store.counts()
    assert counts == {"documents": 3, "chunks": len(chunks), "tokens": sum(table.n_tokens)}
    assert len(store.live_order()) == counts["chunks"]
    assert store.disk_bytes() > 0
    assert store.verify()[1] == []


def test_document_metadata_reads_back_and_follows_updates(store: Store, uri: str) -> None:
    assert store.field_keys() == ["kind", "path", "title"]
    assert store.document_fields(["a", "nope"]) == {"a": {"kind": "text", "path": "a", "title": ""}}
    tagged = Document("d", "delta one", "Delta", "d", "h1", "markdown", (("status", "draft"),))
    cs.add_documents([tagged], uri, chunk=SPEC, compact_fraction=None)
    assert store.field_keys() == ["kind", "path", "title", "status"]
    assert store.document_fields(["d"])["d"] == {
        "kind": "markdown", "path": "d", "title": "Delta", "status": "draft"
    }  # fmt: skip
    retagged = Document("d", "delta two", "", "d", "h2", "markdown", (("title", "Front"),))
    cs.add_documents([retagged], uri, chunk=SPEC, compact_fraction=None)
    assert store.document_fields(["d"])["d"] == {"kind": "markdown", "path": "d", "title": "Front"}
    cs.remove_documents(["d"], uri)
    assert store.document_fields(["d"]) == {} and store.field_keys() == ["kind", "path", "title"]


def test_unknown_ids_raise_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="'a#9'"):
        store.get_chunk("a#9")
    with pytest.raises(KeyError):  # NotFoundError is a KeyError too
        store.get_document("zzz")
    with pytest.raises(NotFoundError, match="'zzz'"):
        store.span_text("zzz", 0, 3)


def test_update_remove_and_compact_through_the_write_path(store: Store, uri: str) -> None:
    docs = [_doc("b", "beta changed\n\nbeta more"), _doc("d", "delta")]
    cs.add_documents(docs, uri, compact_fraction=None)
    assert store.get_document("b").text == "beta changed\n\nbeta more"
    assert sorted(c.text for c in store.chunks_of(["b"])) == ["beta changed", "beta more"]
    cs.remove_documents(["c"], uri, compact_fraction=None)
    with pytest.raises(NotFoundError):
        store.get_document("c")
    assert store.chunks_of(["c"]) == [] and "c" not in store.doc_hashes()
    expected = {c.chunk_id: c.text for c in store.iter_chunks()}
    assert set(expected) == {"a#0", "a#1", "b#0", "b#1", "d#0"}
    assert _live_texts(store) == expected  # deltas and deleted rows resolve to the live chunks
    assert store.counts()["documents"] == 3 and store.counts()["chunks"] == 5
    cs.compact_index(uri)
    snap = store.snapshot(eager=True)
    assert all(segments.compacted for segments in snap.segments.values())
    assert snap.rowids.tolist() == store.live_order().tolist()
    assert _live_texts(store) == expected
    assert store.verify()[1] == []


def test_generations_grow_with_every_commit(store: Store, uri: str) -> None:
    seen = [store.generation()]
    cs.add_documents([_doc("d", "delta")], uri, compact_fraction=None)
    seen.append(store.generation())
    seen.append(store.commit_settings({"default_mode": "tfidf"}))
    cs.remove_documents(["d"], uri, compact_fraction=None)
    seen.append(store.generation())
    cs.compact_index(uri)
    seen.append(store.generation())
    assert seen == sorted(set(seen)) and seen[2] == seen[1] + 1
    assert store.snapshot().generation == store.read_manifest()["generation"] == seen[-1]


def test_a_snapshot_and_a_pinned_read_see_one_generation(store: Store, uri: str) -> None:
    before = store.snapshot(eager=True)
    old = [before.rows.hit(row, 1, 0.0).text for row in range(len(before.rows))]
    with store.reading():
        generation = store.generation()
        replaced = [_doc("a", "alpha replaced")]
        cs.add_documents(replaced, uri, compact_fraction=None)  # another store object commits
        assert store.generation() == generation
        assert store.get_document("a").text == "alpha one\n\nalpha two"
        assert store.snapshot().generation == generation
    assert store.generation() == generation + 1
    assert store.get_document("a").text == "alpha replaced"
    assert before.generation == generation  # a snapshot never changes under its reader
    assert [before.rows.hit(row, 1, 0.0).text for row in range(len(before.rows))] == old
    assert "alpha one" in old
    assert _live_texts(store)["a#0"] == "alpha replaced"


def _check_reads(reads: list[dict[str, Any]], rounds: int) -> None:
    """Every read saw one whole round; generations never went back."""
    assert reads
    for read in reads:
        assert read["generation"] == read["snapshot_generation"]
        assert len(read["document_versions"]) == 1, read
        assert read["snapshot_versions"] == read["table_versions"] == read["document_versions"]
        assert read["chunks"] == 3 * len(DOC_IDS)
    generations = [read["generation"] for read in reads]
    assert generations == sorted(generations)
    version_of = {read["generation"]: read["document_versions"][0] for read in reads}
    assert all(version_of[read["generation"]] == read["document_versions"][0] for read in reads)
    assert len({read["document_versions"][0] for read in reads}) >= rounds


@pytest.mark.parametrize("reader", ["process", "thread"])
def test_a_concurrent_reader_sees_old_or_new_never_half(
    uri: str, tmp_path: Path, reader: str
) -> None:
    rounds = 12
    cs.add_documents(_round(0), uri, chunk=SPEC, compact_fraction=None)
    stop = tmp_path / "stop"
    reads: list[dict[str, Any]] = []
    if reader == "process":
        errors = tmp_path / "reader.stderr"  # shown by any failure below
        with errors.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, str(READER), uri, str(stop)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        assert proc.stdout is not None
        wait_for = functools.partial(_read_lines, proc.stdout, reads, errors)
    else:
        done = threading.Event()
        thread = threading.Thread(target=_read_in_thread, args=(uri, reads, done))
        thread.start()
        wait_for = functools.partial(_wait_in_thread, thread, reads)
    try:
        for i in range(1, rounds + 1):
            report = cs.add_documents(_round(i), uri, compact_fraction=0.0 if i % 4 == 0 else None)
            wait_for(report.generation)  # the reader met this generation before the next
    finally:
        stop.touch()
        if reader == "process":
            out, _ = proc.communicate(timeout=60)
            reads += [_parsed(line, errors) for line in out.splitlines()]
            assert proc.returncode == 0, errors.read_text()
        else:
            done.set()
            thread.join(timeout=60)
    _check_reads(reads, rounds)


def _read_lines(stdout: Any, reads: list[dict[str, Any]], errors: Path, generation: int) -> None:
    while not reads or reads[-1]["generation"] < generation:
        line = stdout.readline()
        assert line, f"the reader process ended early; its stderr:\n{errors.read_text()}"
        reads.append(_parsed(line, errors))


def _parsed(line: str, errors: Path) -> dict[str, Any]:
    """One read the reader process printed (a failure shows the line and its stderr)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"reader printed {line!r}; stderr:\n{errors.read_text()}") from exc


def _read_in_thread(uri: str, reads: list[dict[str, Any]], done: threading.Event) -> None:
    store = open_store(uri)
    try:
        while not done.is_set():
            reads.append(read_once(store))
    finally:
        store.close()


def _wait_in_thread(thread: threading.Thread, reads: list[dict[str, Any]], generation: int) -> None:
    deadline = time.monotonic() + 60
    while not reads or reads[-1]["generation"] < generation:
        assert thread.is_alive(), "the reader thread ended early"
        assert time.monotonic() < deadline, f"the reader never saw generation {generation}"
        time.sleep(0.005)


def test_vectors_round_trip_and_prune(store: Store) -> None:
    vectors = store.vector_cache()
    assert isinstance(vectors, VectorStore)
    one, two = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    vectors.put_many("m1", {"k1": one, "k2": two})
    vectors.put_many("m2", {"k1": two})
    found = vectors.get_many("m1", ["k1", "k3"])
    assert list(found) == ["k1"] and np.array_equal(found["k1"], one)
    assert np.array_equal(vectors.get_many("m2", ["k1"])["k1"], two)
    vectors.put_many("m1", {"k1": two})  # a stored key is replaced
    assert np.array_equal(vectors.get_many("m1", ["k1"])["k1"], two)
    again = open_store(store.uri)
    try:
        assert np.array_equal(again.vector_cache().get_many("m1", ["k2"])["k2"], two)
    finally:
        again.close()
    assert vectors.prune("m1", ["k1"]) == 2  # m1's k2, and every vector of another model
    assert list(vectors.get_many("m1", ["k1", "k2"])) == ["k1"]
    assert vectors.get_many("m2", ["k1"]) == {}


def test_the_manifest_reads_back_what_was_committed(store: Store) -> None:
    manifest = store.read_manifest()
    assert manifest["generation"] == store.generation()
    assert manifest["schema_version"] == store.schema_version
    fusion = {"method": "convex", "k": 60.0, "norm": "zscore", "weight": 0.3, "depth": 100}
    generation = store.commit_settings({"default_mode": "tfidf", "fusion": fusion})
    with store.lock():
        store.commit_update(
            documents=[],
            chunks=[],
            removed=[],
            arrays={},
            dead_terms={},
            manifest={"roots": ["/somewhere"]},
        )
    again = open_store(store.uri)
    try:
        read = again.read_manifest()
        assert (read["default_mode"], read["fusion"], read["roots"]) == (
            "tfidf",
            fusion,
            ["/somewhere"],
        )
        assert read["generation"] == generation + 1 == again.generation()
    finally:
        again.close()
    assert store.counts()["documents"] == 3  # settings commits leave documents alone


def test_a_compaction_from_a_stale_generation_is_refused(store: Store, uri: str) -> None:
    snap = store.snapshot(eager=False)
    cs.add_documents([_doc("d", "delta")], uri)
    generation = store.generation()
    arrays = {mode: segments.base for mode, segments in snap.segments.items()}
    with store.lock(), pytest.raises(IndexWriteError):
        store.commit_base(
            arrays=arrays,
            rowids=snap.rowids,
            expected_generation=snap.generation,
            manifest={},
        )
    assert store.generation() == generation and "d" in store.doc_hashes()
    assert store.verify()[1] == []


def test_one_writer_at_a_time(store: Store, uri: str) -> None:
    other = open_store(uri)
    try:
        with store.lock():
            with pytest.raises(IndexLockedError), other.lock():
                pass
            generation = store.generation()
            with pytest.raises(IndexLockedError):
                cs.add_documents([_doc("d", "delta")], uri)
            assert store.generation() == generation and "d" not in store.doc_hashes()
        with other.lock(wait=5.0):  # released: the next writer gets it
            assert other.commit_settings({"default_mode": "bm25"}) == generation + 1
    finally:
        other.close()


def test_a_writer_waits_for_the_lock_when_asked(store: Store, uri: str) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.lock():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    threading.Timer(0.3, release.set).start()
    report = cs.add_documents([_doc("d", "delta")], uri, wait=10.0)
    holder.join(10)
    assert report.added == 1 and "d" in store.doc_hashes()


def test_a_closed_store_cannot_be_read(store: Store) -> None:
    store.close()
    with pytest.raises(CtxselectError):
        store.get_document("a")

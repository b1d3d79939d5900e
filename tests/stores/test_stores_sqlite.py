"""SQLiteStore: round trips, generations, transactions, clear errors on damaged indexes."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from _support.tiny_base import tiny_base
from ctxselect.errors import (
    IndexCorruptError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexWriteError,
    NotFoundError,
)
from ctxselect.stores.base import Store
from ctxselect.stores.embedded import files
from ctxselect.stores.embedded.rows import LazyRows, StaleRowsError
from ctxselect.stores.embedded.sqlite import FILE_NAME, SCHEMA_VERSION, SQLiteStore
from ctxselect.types import Chunk, ChunkTable, Document


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id=doc_id, text=text, title="T", source=doc_id, content_hash="h" + text)


def _chunk(doc_id: str, ordinal: int, start: int, end: int, text: str) -> Chunk:
    return Chunk(f"{doc_id}#{ordinal}", doc_id, ordinal, start, end, text, "T", 3, "")


def _build(store: SQLiteStore, docs: list[Document], chunks: list[Chunk]) -> int:
    with store.lock():
        return store.commit_update(
            documents=docs,
            chunks=sorted(chunks, key=lambda c: c.chunk_id),
            removed=[],
            arrays=tiny_base(len(chunks)),
            dead_terms={},
            manifest={"modes": ["bm25"]},
            rebuild=True,
        )


def test_missing_index_names_the_command_that_creates_it(tmp_path):
    with pytest.raises(IndexNotFoundError, match=r"ctxselect index PATH\.\.\. --index"):
        SQLiteStore(tmp_path / "nope")


def test_a_new_store_is_a_store_and_has_nothing_to_search(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    assert isinstance(store, Store)
    assert store.generation() == 0 and store.read_manifest()["schema_version"] == SCHEMA_VERSION
    with pytest.raises(IndexNotFoundError, match="holds nothing yet"):
        store.snapshot()


def test_documents_chunks_and_base_round_trip(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    doc = _doc("a.md", "hello world")
    generation = _build(
        store, [doc], [_chunk("a.md", 0, 0, 5, "hello"), _chunk("a.md", 1, 6, 11, "world")]
    )
    assert generation == store.generation() == 1
    assert store.get_document("a.md") == doc
    assert store.get_chunk("a.md#1").text == "world"
    assert store.span_text("a.md", 3, 8) == "lo wo"
    assert store.counts() == {"documents": 1, "chunks": 2, "tokens": 6}
    snap = store.snapshot()
    assert isinstance(snap.rows, ChunkTable) and snap.rows.chunk_ids == ("a.md#0", "a.md#1")
    assert snap.segments["bm25"].compacted
    assert snap.segments["bm25"].base["weights"].tolist() == [0.5, 0.5]
    assert snap.rowids.tolist() == store.live_order().tolist()
    with pytest.raises(NotFoundError, match=r"no chunk 'a\.md#9'"):
        store.get_chunk("a.md#9")
    with pytest.raises(NotFoundError, match=r"no document 'b\.md'"):
        store.get_document("b.md")


def test_an_update_adds_a_delta_and_marks_replaced_rows_dead(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    _build(
        store,
        [_doc("a", "aaa"), _doc("b", "bbb")],
        [_chunk("a", 0, 0, 3, "aaa"), _chunk("b", 0, 0, 3, "bbb")],
    )
    delta = {k: v for k, v in tiny_base(1)["bm25"].items() if k != "weights"}
    with store.lock():
        store.commit_update(
            documents=[_doc("a", "xyz")],
            chunks=[_chunk("a", 0, 0, 3, "xyz")],
            removed=["b"],
            arrays={"bm25": delta},
            dead_terms={"bm25": {"word": 2}},
            manifest={},
        )
    assert store.counts() == {"documents": 1, "chunks": 1, "tokens": 3}
    assert store.get_chunk("a#0").text == "xyz"
    snap = store.snapshot()
    segments = snap.segments["bm25"]
    assert not segments.compacted and len(segments.deltas) == 1
    assert segments.dead is not None and segments.dead.tolist() == [0, 1]  # both base rows
    assert dict(segments.dead_terms) == {"word": 2}
    assert snap.manifest["pending"] == {"delta_rows": 1, "dead_rows": 2}
    assert snap.rows.hit(2, 1, 1.0).chunk_id == "a#0"  # the delta row


def test_a_failed_commit_keeps_the_last_committed_state(tmp_path, monkeypatch):
    store = SQLiteStore(tmp_path / "ix", create=True)
    _build(store, [_doc("a", "aaa")], [_chunk("a", 0, 0, 3, "aaa")])

    def full(*_args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store, "_insert_delta", full)
    with pytest.raises(IndexWriteError, match=r"disk is full.*last committed state"), store.lock():
        store.commit_update(
            documents=[_doc("b", "bbb")],
            chunks=[_chunk("b", 0, 0, 3, "bbb")],
            removed=["a"],
            arrays={"bm25": {}},
            dead_terms={},
            manifest={},
        )
    assert store.doc_hashes() == {"a": "haaa"} and store.generation() == 1
    reopened = SQLiteStore(tmp_path / "ix")
    assert reopened.counts()["chunks"] == 1 and reopened.get_chunk("a#0").text == "aaa"


def test_a_full_disk_while_writing_arrays_leaves_no_file_and_no_change(tmp_path, monkeypatch):
    store = SQLiteStore(tmp_path / "ix", create=True)
    _build(store, [_doc("a", "aaa")], [_chunk("a", 0, 0, 3, "aaa")])
    before = sorted(p.name for p in (tmp_path / "ix" / files.ARRAYS_DIR).iterdir())

    def no_space(handle: object, array: np.ndarray) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "write_array", no_space)
    with pytest.raises(IndexWriteError, match="disk is full"):
        _build(store, [_doc("b", "bbb")], [_chunk("b", 0, 0, 3, "bbb")])
    after = sorted(p.name for p in (tmp_path / "ix" / files.ARRAYS_DIR).iterdir())
    assert after == before and store.doc_hashes() == {"a": "haaa"}


def test_manifest_keeps_schema_version(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    store.write_manifest({"chunk": {"size": 5}, "schema_version": 99})
    manifest = store.read_manifest()
    assert manifest["chunk"] == {"size": 5} and manifest["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(("version", "hint"), [(7, "upgrade ctxselect"), (0, "rebuild it")])
def test_other_schema_versions_give_the_rebuild_command(tmp_path, version, hint):
    store = SQLiteStore(tmp_path / "ix", create=True)
    store._conn.execute(
        "UPDATE manifest SET value = ? WHERE key = 'schema_version'", (json.dumps(version),)
    )
    store.close()
    with pytest.raises(IndexMismatchError, match=rf"schema version {version}.*{hint}.*rm -r"):
        SQLiteStore(tmp_path / "ix")


def test_damaged_file_is_a_clear_error_not_a_traceback(tmp_path):
    folder = tmp_path / "ix"
    folder.mkdir()
    (folder / FILE_NAME).write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(IndexCorruptError, match="not a readable ctxselect index"):
        SQLiteStore(folder)


def test_a_truncated_base_file_is_a_clear_error(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    _build(store, [_doc("a", "a b c")], [_chunk("a", i, 0, 1, "a") for i in range(50)])
    base = tmp_path / "ix" / store.read_manifest()["base"]["file"]
    base.write_bytes(base.read_bytes()[:100])
    with pytest.raises(IndexCorruptError, match="damaged"):
        store.snapshot()


def test_lazy_rows_read_hits_by_row_id_and_notice_deleted_rows(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    chunks = [_chunk("a", 0, 0, 3, "aaa"), _chunk("b", 0, 0, 3, "bbb")]
    _build(store, [_doc("a", "aaa"), _doc("b", "bbb")], chunks)
    rows = store.snapshot(eager=False).rows
    assert isinstance(rows, LazyRows) and len(rows) == 2
    assert rows.hit(1, 1, 2.0).text == "bbb" and rows.chunk_ids[0] == "a#0"
    assert rows.row_of.get("b#0") == 1 and rows.row_of.get("zzz") is None
    with store.lock():
        store.commit_update(
            documents=[], chunks=[], removed=["b"], arrays={}, dead_terms={}, manifest={}
        )
    with pytest.raises(StaleRowsError):
        rows.hit(1, 1, 2.0)


def test_a_reload_reuses_the_rows_it_has_and_reads_only_new_chunks(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    chunks = [_chunk(d, 0, 0, 3, d * 3) for d in "abc"]
    _build(store, [_doc(d, d * 3) for d in "abc"], chunks)
    before = store.snapshot(eager=True)
    delta = {k: v for k, v in tiny_base(1)["bm25"].items() if k != "weights"}
    with store.lock():
        store.commit_update(
            documents=[_doc("d", "ddd")],
            chunks=[_chunk("d", 0, 0, 3, "ddd")],
            removed=["b"],
            arrays={"bm25": delta},
            dead_terms={},
            manifest={},
        )
    reused = store.snapshot(eager=True, previous=before).rows
    fresh = store.snapshot(eager=True).rows
    assert isinstance(reused, ChunkTable) and isinstance(fresh, ChunkTable)
    assert reused.row_of == fresh.row_of == {"a#0": 0, "c#0": 2, "d#0": 3}
    assert reused.hit(3, 1, 1.0) == fresh.hit(3, 1, 1.0) and reused.texts[3] == "ddd"


@pytest.mark.parametrize(
    "exc",
    [
        sqlite3.OperationalError("attempt to write a readonly database"),
        OSError(13, "Permission denied"),
        OSError(30, "Read-only file system"),
    ],
)
def test_a_write_refused_by_permissions_says_to_fix_them_not_to_free_space(tmp_path, exc):
    message = str(files.write_error(tmp_path / "ix", exc))
    assert "write permission" in message and "free space" not in message
    assert "last committed state" in message


def test_an_unreadable_base_file_is_a_permission_error_not_damage(tmp_path, monkeypatch):
    """Root ignores file modes, so the denial is simulated where the base file opens."""
    import builtins

    import ctxselect as cs
    from ctxselect.errors import IndexAccessError
    from ctxselect.types import Document

    index = tmp_path / "ix"
    cs.add_documents([Document("a", "clock domain crossing", content_hash="h")], index)

    def denied(path, *args, **kwargs):
        if str(path).endswith(".bin"):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(files, "open", denied, raising=False)
    denial = "permission denied; the index is not damaged"
    with pytest.raises(IndexAccessError, match=denial), cs.open_index(index) as idx:
        idx.search("clock")

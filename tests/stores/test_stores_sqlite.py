"""SQLiteStore: round trips, transactions, clear errors on missing or damaged indexes."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.errors import (
    IndexCorruptError,
    IndexMismatchError,
    IndexNotFoundError,
    NotFoundError,
)
from ctxselect.stores.embedded.sqlite import FILE_NAME, SQLiteStore
from ctxselect.types import Chunk, Document


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id=doc_id, text=text, title="T", source=doc_id, content_hash="h" + text)


def _chunk(doc_id: str, ordinal: int, start: int, end: int, text: str) -> Chunk:
    return Chunk(f"{doc_id}#{ordinal}", doc_id, ordinal, start, end, text, "T", 3, "")


def test_missing_index_names_the_command_that_creates_it(tmp_path):
    with pytest.raises(IndexNotFoundError, match=r"ctxselect index PATH\.\.\. --index"):
        SQLiteStore(tmp_path / "nope")


def test_documents_chunks_and_arrays_round_trip(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    doc = _doc("a.md", "hello world")
    store.write_documents(
        [doc], [_chunk("a.md", 0, 0, 5, "hello"), _chunk("a.md", 1, 6, 11, "world")], []
    )
    assert store.get_document("a.md") == doc
    assert store.get_chunk("a.md#1").text == "world"
    assert store.span_text("a.md", 3, 8) == "lo wo"
    table = store.chunk_table()
    assert table.chunk_ids == ("a.md#0", "a.md#1")
    arrays = {"x": np.arange(5, dtype=np.int32), "v": np.array(["ab", "c"])}
    store.write_arrays("bm25", arrays)
    back = store.read_arrays("bm25")
    assert back["x"].tolist() == [0, 1, 2, 3, 4] and back["v"].tolist() == ["ab", "c"]
    assert store.counts() == {"documents": 1, "chunks": 2}
    with pytest.raises(NotFoundError, match=r"no chunk 'a\.md#9'"):
        store.get_chunk("a.md#9")
    with pytest.raises(NotFoundError, match=r"no document 'b\.md'"):
        store.get_document("b.md")


def test_replacing_and_removing_documents_removes_their_chunks(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    store.write_documents(
        [_doc("a", "aaa"), _doc("b", "bbb")],
        [_chunk("a", 0, 0, 3, "aaa"), _chunk("b", 0, 0, 3, "bbb")],
        [],
    )
    store.write_documents([_doc("a", "xyz")], [_chunk("a", 0, 0, 3, "xyz")], ["b"])
    assert store.counts() == {"documents": 1, "chunks": 1}
    assert store.get_chunk("a#0").text == "xyz"


def test_failed_transaction_keeps_the_last_committed_state(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    store.write_documents([_doc("a", "aaa")], [_chunk("a", 0, 0, 3, "aaa")], [])
    with pytest.raises(RuntimeError), store.transaction():
        store.write_documents([_doc("b", "bbb")], [_chunk("b", 0, 0, 3, "bbb")], ["a"])
        raise RuntimeError("disk full")
    assert store.doc_hashes() == {"a": "haaa"}
    reopened = SQLiteStore(tmp_path / "ix")
    assert reopened.counts() == {"documents": 1, "chunks": 1}


def test_manifest_round_trip_keeps_schema_version(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    store.write_manifest({"chunk": {"size": 5}, "schema_version": 99})
    manifest = store.read_manifest()
    assert manifest["chunk"] == {"size": 5} and manifest["schema_version"] == 1


def test_other_schema_version_gives_the_rebuild_command(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    store._conn.execute("UPDATE manifest SET value = '7' WHERE key = 'schema_version'")
    store.close()
    with pytest.raises(IndexMismatchError, match=r"schema version 7.*rebuild"):
        SQLiteStore(tmp_path / "ix")


def test_damaged_file_is_a_clear_error_not_a_traceback(tmp_path):
    folder = tmp_path / "ix"
    folder.mkdir()
    (folder / FILE_NAME).write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(IndexCorruptError, match="not a readable ctxselect index"):
        SQLiteStore(folder)

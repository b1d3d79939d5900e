"""A long document of many chunks is read once per batch, not once per chunk.

Removing or re-chunking one large document read its chunks with SQLite's ``substr`` over
the document's text, once per chunk: a 2 MB document of ~1,000 chunks took seconds and
a 50 MB one did not finish (``bench/large_document.py`` times it). The reads now take
each document once and slice it in Python; these tests pin what they return and how
often the document is read, not how long it takes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import ctxselect as cs
from ctxselect.config import ChunkSpec
from ctxselect.stores.embedded import integrity
from ctxselect.stores.embedded.sqlite import SQLiteStore
from ctxselect.types import Document

WORDS = " ".join(f"word{i}" for i in range(40))


def long_index(tmp_path: Path) -> Path:
    text = "\n\n".join(f"Paragraph {i}: {WORDS}" for i in range(400))
    docs = [Document("long", text, content_hash="h1"), Document("short", "a short note")]
    folder = tmp_path / "ix"
    cs.add_documents(docs, folder, chunk=ChunkSpec(chunker="tokens", size=64))
    return folder


def test_chunks_of_reads_a_long_document_once(tmp_path: Path) -> None:
    store = SQLiteStore(long_index(tmp_path))
    statements: list[str] = []
    try:
        expected = sorted(
            (c for c in store.iter_chunks() if c.doc_id == "long"), key=lambda c: c.chunk_id
        )
        assert len(expected) > 100
        store._conn.set_trace_callback(statements.append)
        found = sorted(store.chunks_of(["long"]), key=lambda c: c.chunk_id)
    finally:
        store._conn.set_trace_callback(None)
        store.close()
    assert found == expected
    assert not any("substr" in s for s in statements)
    assert sum("FROM documents" in s for s in statements) == 1


def test_the_digest_of_a_documents_chunks_is_the_per_row_digest(tmp_path: Path) -> None:
    folder = long_index(tmp_path)
    conn = sqlite3.connect(folder / "index.sqlite")
    try:
        per_row = integrity.chunks_digest(
            conn.execute(f"{integrity.CHUNK_DIGEST_SQL} WHERE c.doc_id IN ('long', 'short')")
        )
        assert integrity.digest_of_docs(conn, ["long", "short"], folder) == per_row
        conn.execute("DELETE FROM documents WHERE doc_id = 'short'")  # damage: no document
        damaged = integrity.chunks_digest(
            conn.execute(f"{integrity.CHUNK_DIGEST_SQL} WHERE c.doc_id IN ('long', 'short')")
        )
        assert integrity.digest_of_docs(conn, ["long", "short"], folder) == damaged
    finally:
        conn.close()


def test_removing_a_long_document_keeps_the_index_sound(tmp_path: Path) -> None:
    folder = long_index(tmp_path)
    cs.remove_documents(["long"], folder)
    assert cs.verify_index(folder).ok
    with cs.open_index(folder) as index:
        assert [h.doc_id for h in index.search("short note", 5)] == ["short"]

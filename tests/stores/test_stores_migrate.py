"""Schema 1 (one SQLite file, arrays as BLOBs) is upgraded to schema 2 on open, exactly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.api import retriever_for
from ctxselect.chunk import make_chunker
from ctxselect.errors import IndexMismatchError
from ctxselect.stores.embedded.sqlite import FILE_NAME, SCHEMA_VERSION, SQLiteStore
from ctxselect.types import Document

# The schema-1 layout, as ctxselect 0.1 wrote it.
V1_SCHEMA = """
CREATE TABLE manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL,
    title TEXT NOT NULL, content_hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE chunks (
    chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, header TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, parent_id TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX chunks_doc ON chunks (doc_id);
CREATE TABLE arrays (
    name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL);
"""
TEXTS = {
    "a.md": "Metastability appears when a flip-flop samples an asynchronous signal.",
    "b.md": "A two-stage synchronizer reduces the failure rate of sampling.",
    "c.md": "Caches keep recently used lines close to the core.",
}
SPEC = cs.ChunkSpec(chunker="tokens", size=8)


def _v1_index(folder: Path) -> list[cs.Chunk]:
    """Write a schema-1 index of TEXTS the way ctxselect 0.1 did; return its chunks."""
    docs = [
        Document(d, t, source=d, content_hash=f"h{d}", kind="markdown") for d, t in TEXTS.items()
    ]
    chunker = make_chunker(SPEC)
    chunks = sorted((c for doc in docs for c in chunker.chunk(doc)), key=lambda c: c.chunk_id)
    folder.mkdir()
    conn = sqlite3.connect(folder / FILE_NAME, isolation_level=None)
    conn.executescript(V1_SCHEMA)
    manifest = {
        "schema_version": 1,
        "chunk": {"chunker": "tokens", "size": 8, "overlap": 0, "tokenizer": "cl100k"},
        "bm25": {"k1": 1.5, "b": 0.75, "stem": True, "stopwords": True},
        "modes": ["bm25", "tfidf", "tfidf-sum"],
        "roots": [],
        "default_mode": "bm25",
    }
    conn.executemany(
        "INSERT INTO manifest VALUES (?, ?)", [(k, json.dumps(v)) for k, v in manifest.items()]
    )
    conn.executemany(
        "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
        [(d.doc_id, d.source, d.kind, d.title, d.content_hash, d.text) for d in docs],
    )
    for c in reversed(chunks):  # rowids in another order than chunk_id order
        conn.execute(
            'INSERT INTO chunks (chunk_id, doc_id, ordinal, start, "end", text, header, '
            "n_tokens, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                c.chunk_id,
                c.doc_id,
                c.ordinal,
                c.start,
                c.end,
                c.text,
                c.header,
                c.n_tokens,
                c.parent_id,
            ),
        )
    for mode in manifest["modes"]:
        for name, a in retriever_for(chunks, mode).arrays().items():
            conn.execute(
                "INSERT INTO arrays VALUES (?, ?, ?, ?)",
                (f"{mode}/{name}", a.dtype.str, json.dumps(a.shape), a.tobytes()),
            )
    conn.close()
    return chunks


def test_a_schema_1_index_is_upgraded_on_open_and_searches_exactly_as_before(tmp_path):
    chunks = _v1_index(tmp_path / "ix")
    with cs.open_index(tmp_path / "ix") as idx:
        assert idx.store.read_manifest()["schema_version"] == SCHEMA_VERSION
        assert idx.store.read_manifest()["migrated_from"] == 1
        for mode in ("bm25", "tfidf", "tfidf-sum"):
            expected = retriever_for(chunks, mode)
            for query in ("synchronizer sampling", "caches core", "metastability signal"):
                assert idx.search(query, 5, mode) == expected.search(query, 5)
        assert idx.info().chunks == len(chunks)
    assert cs.verify_index(tmp_path / "ix").ok
    # and it keeps working as a schema-2 index: incremental updates on top of it
    extra = Document("d.md", "Synchronizer chains", source="d.md", content_hash="hd")
    cs.add_documents([extra], tmp_path / "ix")
    with cs.open_index(tmp_path / "ix") as idx:
        assert idx.search("chains")[0].doc_id == "d.md"


def test_a_schema_1_index_without_arrays_gives_the_rebuild_command(tmp_path):
    _v1_index(tmp_path / "ix")
    conn = sqlite3.connect(tmp_path / "ix" / FILE_NAME)
    conn.execute("DELETE FROM arrays")
    conn.commit()
    conn.close()
    with pytest.raises(
        IndexMismatchError, match=r"schema version 1 and could not be upgraded.*rm -r"
    ):
        SQLiteStore(tmp_path / "ix")

"""Older indexes are upgraded to the current schema on open, exactly: schema 1 (one SQLite
file, arrays as BLOBs) and schema 2 (every chunk's text stored beside its document's)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.api import retriever_for
from ctxselect.chunk import make_chunker
from ctxselect.errors import IndexCorruptError, IndexMismatchError
from ctxselect.stores.embedded import integrity, opening
from ctxselect.stores.embedded import sqlite as embedded_sqlite
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
SPEC = cs.ChunkSpec(chunker="paragraph", size=40)  # a layout no release changed
OLD_BM25 = cs.BM25Params(identifiers=False)  # 0.1 had no identifier parts


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
        "chunk": {"chunker": "paragraph", "size": 40, "overlap": 0, "tokenizer": "cl100k"},
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
        for name, a in retriever_for(chunks, mode, OLD_BM25).arrays().items():
            if mode == "bm25" and name == "params":
                a = a[:4]  # k1, b, stem, stopwords: as 0.1 wrote it
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
            expected = retriever_for(chunks, mode, OLD_BM25)
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


# The schema-2 chunk table, as ctxselect wrote it before chunk texts were read from
# their documents (every text stored, NOT NULL).
V2_CHUNKS = """
CREATE TABLE chunks_v2 (
    id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, header TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, parent_id TEXT NOT NULL, text TEXT NOT NULL)
"""
V2_SPEC = cs.ChunkSpec(chunker="markdown", size=40, tokenizer="chars4")
WORDS = ("clock", "reset", "synchronizer", "metastability", "café", "naïve", "😀", "fifo", "gray")


def _v2_docs(n: int) -> list[Document]:
    out = []
    for i in range(n):
        body = "\n\n".join(
            " ".join(WORDS[(i + j + k) % len(WORDS)] for k in range(30)) for j in range(4)
        )
        text = f"# Note {i}\n\n{body}\n\n## Details\n\n{body[:200]}\n"
        out.append(
            Document(f"n{i}.md", text, source=f"n{i}.md", content_hash=f"h{i}", kind="markdown")
        )
    return out


def _updated_index(folder: Path) -> None:
    """An index built, then updated without compaction: a delta segment, dead rows, and the
    newest chunk ids deleted."""
    docs = _v2_docs(30)
    cs.add_documents(docs, folder, chunk=V2_SPEC)
    changed = Document("n0.md", docs[0].text + "\nrewritten", source="n0.md", content_hash="x")
    cs.add_documents([changed, *_v2_docs(32)[30:]], folder, compact_fraction=None)
    cs.remove_documents(["n31.md"], folder, compact_fraction=None)


def _as_schema_2(folder: Path) -> None:
    """Rewrite an index in the schema-2 layout: every chunk text stored beside its document."""
    conn = sqlite3.connect(folder / FILE_NAME, isolation_level=None)
    conn.execute("BEGIN")
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()[0]
    conn.execute(V2_CHUNKS)
    conn.execute(
        'INSERT INTO chunks_v2 SELECT c.id, c.chunk_id, c.doc_id, c.ordinal, c.start, c."end", '
        'c.header, c.n_tokens, c.parent_id, substr(d.text, c.start + 1, c."end" - c.start) '
        "FROM chunks c JOIN documents d ON d.doc_id = c.doc_id"
    )
    conn.execute("DROP TABLE chunks")
    conn.execute("ALTER TABLE chunks_v2 RENAME TO chunks")
    conn.execute("CREATE INDEX chunks_doc ON chunks (doc_id)")
    conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'chunks'", (seq,))
    conn.execute("UPDATE manifest SET value = '2' WHERE key = 'schema_version'")
    integrity.seal(conn)
    conn.execute("COMMIT")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _reads(index: Path) -> tuple[list[cs.Chunk], dict[tuple[str, str], list[cs.Hit]]]:
    with cs.open_index(index) as idx:
        chunks = list(idx.store.iter_chunks())
        hits = {
            (mode, q): idx.search(q, 10, mode)
            for mode in ("bm25", "tfidf", "tfidf-sum")
            for q in ("clock reset", "café naïve 😀", "metastability rewritten")
        }
    return chunks, hits


def _sql(folder: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(folder / FILE_NAME)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def v2(tmp_path: Path) -> tuple[Path, tuple[list[cs.Chunk], dict[tuple[str, str], list[cs.Hit]]]]:
    """A schema-2 index and what every read returned before it was made schema 2."""
    folder = tmp_path / "ix"
    _updated_index(folder)
    reference = _reads(folder)
    _as_schema_2(folder)
    monkey = pytest.MonkeyPatch()
    try:  # a read-only schema-2 index is read as it is, not upgraded
        monkey.setattr(opening.os, "access", lambda path, mode: mode != opening.os.W_OK)
        store = SQLiteStore(folder)
        assert store.readonly and store.schema_version == 2
        store.close()
        assert _reads(folder) == reference
    finally:
        monkey.undo()
    assert _sql(folder, "SELECT value FROM manifest WHERE key = 'schema_version'") == [("2",)]
    assert _sql(folder, "SELECT count(*) FROM chunks WHERE text IS NULL") == [(0,)]
    return folder, reference


def test_a_schema_2_index_is_read_as_is_then_upgraded_by_a_writer_without_loss(v2):
    folder, (chunks, hits) = v2
    seq = _sql(folder, "SELECT seq FROM sqlite_sequence WHERE name = 'chunks'")[0][0]
    assert seq > max(i for (i,) in _sql(folder, "SELECT id FROM chunks"))  # newest ids dead
    size = (folder / FILE_NAME).stat().st_size
    assert _reads(folder) == (chunks, hits)  # a writable folder: searched, never written
    assert _sql(folder, "SELECT value FROM manifest WHERE key = 'schema_version'") == [("2",)]
    store = SQLiteStore(folder)
    with store.lock():  # the first writer upgrades it
        manifest = store.read_manifest()
        assert manifest["schema_version"] == SCHEMA_VERSION and manifest["migrated_from"] == 2
    store.close()
    assert _reads(folder) == (chunks, hits)
    assert all(hits.values()) and len(chunks) > 60
    assert _sql(folder, "SELECT count(*) FROM chunks WHERE text IS NOT NULL") == [(0,)]
    assert (folder / FILE_NAME).stat().st_size < size  # the texts' pages went back
    assert cs.verify_index(folder).ok
    cs.add_documents([Document("new.md", "fresh synchronizer", content_hash="n")], folder)
    new_ids = _sql(folder, "SELECT id FROM chunks WHERE doc_id = 'new.md'")
    assert new_ids and min(i for (i,) in new_ids) > seq  # a dead row's id is never reused
    with cs.open_index(folder) as idx:
        assert idx.search("fresh")[0].doc_id == "new.md"


def test_a_damaged_schema_2_index_is_not_upgraded_and_stays_as_it_was(v2):
    folder, _ = v2
    conn = sqlite3.connect(folder / FILE_NAME, isolation_level=None)
    conn.execute("UPDATE chunks SET text = 'tampered' WHERE chunk_id = 'n1.md#0'")
    conn.close()
    store = SQLiteStore(folder)
    try:
        with pytest.raises(IndexCorruptError, match="chunk checksum"), store.lock():
            pass  # the first writer upgrades: the checksum refuses it
    finally:
        store.close()
    with pytest.raises(IndexCorruptError, match="chunk checksum"):
        cs.add_documents([Document("new.md", "fresh", content_hash="n")], folder)
    assert _sql(folder, "SELECT value FROM manifest WHERE key = 'schema_version'") == [("2",)]
    assert _sql(folder, "SELECT text FROM chunks WHERE chunk_id = 'n1.md#0'") == [("tampered",)]


def test_an_older_ctxselect_refuses_to_write_a_current_index(tmp_path, monkeypatch):
    cs.add_documents([Document("a.md", "alpha", content_hash="a")], tmp_path / "ix")
    monkeypatch.setattr(embedded_sqlite, "SCHEMA_VERSION", 2)  # what ctxselect 0.x checks
    expected = rf"schema version {SCHEMA_VERSION}.*reads version 2.*upgrade"
    with pytest.raises(IndexMismatchError, match=expected):
        SQLiteStore(tmp_path / "ix")

"""Chunk texts are stored once: a chunk row holds offsets into its document's text.

Every reader (``get_chunk``, ``chunks_of``, ``iter_chunks``, ``chunk_table``, eager and
lazy ``snapshot`` rows) must return exactly the text the chunker made, for every chunker,
while ``chunks.text`` stays NULL for every chunk that is its document's span.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import ctxselect as cs
from _support.tiny_base import tiny_base
from ctxselect.chunk import CHUNKERS, make_chunker
from ctxselect.errors import IndexCorruptError
from ctxselect.stores.embedded.rows import LazyRows
from ctxselect.stores.embedded.sqlite import SQLiteStore
from ctxselect.types import Chunk, ChunkTable, Document

REPO_DOCS = Path(__file__).resolve().parents[2] / "docs"
# Edge cases beside the real chapters: astral characters, combining marks, CRLF, U+2028,
# headings with a path for the header, and text the tokenizer splits mid-word.
EXTRA = {
    "unicode.md": "# Café ☕\n\nNaïve façade: 😀 emoji, 漢字 and e\u0301 combined.\r\n\r\n"
    "## Straße\n\nA line\u2028separator, then über-long wordsssssssssssssssssssssss.\n",
    "plain.txt": "\n\n".join(f"Paragraph {i}: " + "clock domain crossing " * 9 for i in range(8)),
    "guide.rst": ".. _top:\n\n=====\nGuide\n=====\n\nIntro.\n\nInstall\n-------\n\n"
    + "Run the installer, then restart. " * 12,
    "pages.txt": "\n\f\n".join(f"Page {i}: " + "setup and teardown " * 10 for i in range(4)),
    "parser.py": "class Parser:\n"
    + "".join(f"    def feed_{i}(self, data):\n        return data * {i}\n\n" for i in range(12)),
}
SPECS = {
    "auto": cs.ChunkSpec(chunker="auto", size=60, tokenizer="chars4"),
    "code": cs.ChunkSpec(chunker="code", size=60, tokenizer="chars4"),
    "markdown": cs.ChunkSpec(chunker="markdown", size=60, tokenizer="chars4"),
    "paragraph": cs.ChunkSpec(chunker="paragraph", size=300, tokenizer="chars4"),
    "pdf": cs.ChunkSpec(chunker="pdf", size=60, tokenizer="chars4"),
    "rst": cs.ChunkSpec(chunker="rst", size=60, tokenizer="chars4"),
    "tokens": cs.ChunkSpec(chunker="tokens", size=40, overlap=10, tokenizer="chars4"),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation chapters (a real Markdown corpus) and the edge cases, copied."""
    root = tmp_path_factory.mktemp("lean") / "docs"
    root.mkdir()
    for path in sorted(REPO_DOCS.glob("*.md")):
        shutil.copy(path, root / path.name)
    for name, text in EXTRA.items():
        (root / name).write_text(text, encoding="utf-8", newline="")
    return root


def _stored_texts(index: Path) -> list[str | None]:
    conn = sqlite3.connect(index / "index.sqlite")
    try:
        return [t for (t,) in conn.execute("SELECT text FROM chunks")]
    finally:
        conn.close()


def test_every_chunker_is_registered_here() -> None:
    assert set(SPECS) == set(CHUNKERS.names())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_reader_returns_the_chunkers_own_texts_and_none_is_stored_twice(
    corpus: Path, tmp_path: Path, name: str
) -> None:
    spec = SPECS[name]
    index = tmp_path / "ix"
    cs.index_paths([corpus], index, chunk=spec)
    store = SQLiteStore(index)
    try:
        docs = [store.get_document(d) for d in sorted(store.doc_hashes())]
        chunker = make_chunker(spec)
        expected = sorted((c for d in docs for c in chunker.chunk(d)), key=lambda c: c.chunk_id)
        assert len(docs) == len(list(corpus.iterdir()))
        assert len(expected) > len(docs)
        text_of = {d.doc_id: d.text for d in docs}
        # what was found: every chunker's text is exactly its document's span
        assert all(text_of[c.doc_id][c.start : c.end] == c.text for c in expected)
        _assert_reads(store, expected)
    finally:
        store.close()
    assert _stored_texts(index) == [None] * len(expected)
    assert cs.verify_index(index).ok


def _assert_reads(store: SQLiteStore, expected: list[Chunk]) -> None:
    """Every read path returns ``expected`` (chunk_id order) exactly."""
    ids = [c.chunk_id for c in expected]
    assert list(store.iter_chunks()) == expected
    assert sorted(store.chunks_of(sorted({c.doc_id for c in expected})), key=_id) == expected
    assert [store.get_chunk(cid) for cid in ids] == expected
    table = store.chunk_table()
    assert table == ChunkTable.from_chunks(expected)
    for eager in (True, False):
        rows = store.snapshot(eager=eager).rows
        assert isinstance(rows, ChunkTable if eager else LazyRows)
        hits = [rows.hit(rows.row_of[cid], 1, 0.0) for cid in ids]
        assert [(h.chunk_id, h.start, h.end, h.text, h.header) for h in hits] == [
            (c.chunk_id, c.start, c.end, c.text, c.header) for c in expected
        ]


def _id(chunk: Chunk) -> str:
    return chunk.chunk_id


def _commit(store: SQLiteStore, docs: list[Document], chunks: list[Chunk]) -> None:
    with store.lock():
        store.commit_update(
            documents=docs,
            chunks=sorted(chunks, key=_id),
            removed=[],
            arrays=tiny_base(len(chunks)),
            dead_terms={},
            manifest={"modes": ["bm25"]},
            rebuild=True,
        )


def test_only_a_text_that_is_not_an_exact_span_is_stored(tmp_path: Path) -> None:
    """A chunk rewritten by its chunker, a document holding NUL (SQLite's substr stops
    there) and a chunk of a document outside the commit keep their own text."""
    docs = [Document("a", "alpha beta gamma"), Document("z", "before\x00after span")]
    chunks = [
        Chunk("a#0", "a", 0, 0, 5, "alpha"),
        Chunk("a#1", "a", 1, 6, 10, "BETA"),  # not the span: stored as written
        Chunk("z#0", "z", 0, 7, 17, "after span"),
    ]
    store = SQLiteStore(tmp_path / "ix", create=True)
    try:
        _commit(store, docs, chunks)
        _assert_reads(store, chunks)
        assert _stored_texts(tmp_path / "ix") == [None, "BETA", "after span"]
    finally:
        store.close()


def test_a_changed_span_is_caught_by_the_chunk_checksum(tmp_path: Path) -> None:
    """A chunk's text now lives in its document: damage there is damage to the chunk."""
    index = tmp_path / "ix"
    cs.add_documents([Document("a", "metastability in synchronizers", content_hash="h")], index)
    conn = sqlite3.connect(index / "index.sqlite", isolation_level=None)
    conn.execute("UPDATE documents SET text = 'metastability in synchronizerz'")
    conn.close()
    with pytest.raises(IndexCorruptError, match="chunk checksum"), cs.open_index(index) as idx:
        idx.search("metastability")
    report = cs.verify_index(index)
    assert not report.ok and any("chunk checksum" in p for p in report.problems)


def test_a_chunk_without_its_document_is_one_clear_error(tmp_path: Path) -> None:
    index = tmp_path / "ix"
    cs.add_documents([Document("a", "metastability in synchronizers", content_hash="h")], index)
    conn = sqlite3.connect(index / "index.sqlite", isolation_level=None)
    conn.execute("DELETE FROM documents")
    conn.close()
    store = SQLiteStore(index)
    try:
        with pytest.raises(IndexCorruptError, match="no text and no document"):
            store.get_chunk("a#0")
        with pytest.raises(IndexCorruptError, match="no text and no document"):
            store.snapshot(eager=False).rows.hit(0, 1, 1.0)
    finally:
        store.close()
    assert not cs.verify_index(index).ok


def test_a_document_holding_nul_verifies_and_slices_exactly(tmp_path: Path) -> None:
    """SQLite's length() and substr() stop at NUL: verify checks such a document in Python
    and span_text slices it as ``document.text[start:end]`` does (negative offsets too)."""
    index = tmp_path / "ix"
    text = "before \x00 after budget words"
    cs.add_documents([Document("d", text, content_hash="h")], index)
    report = cs.verify_index(index)
    assert report.ok, report.problems
    with cs.open_index(index) as idx:
        for start, end in [(0, len(text)), (3, 12), (8, 20), (-10, 5), (-10, -2), (5, 2)]:
            assert idx.span_text("d", start, end) == text[start:end]
        assert idx.span_text("d", 0, 4) == "befo"


def test_verify_finds_a_bad_span_in_a_document_holding_nul(tmp_path: Path) -> None:
    """The Python check of NUL documents still reports offsets past the text."""
    index = tmp_path / "ix"
    cs.add_documents([Document("d", "nul \x00 budget words", content_hash="h")], index)
    conn = sqlite3.connect(index / "index.sqlite", isolation_level=None)
    conn.execute('UPDATE chunks SET "end" = 999')
    conn.close()
    report = cs.verify_index(index)
    assert not report.ok
    assert any("offsets or text do not match" in p and "d#0" in p for p in report.problems)

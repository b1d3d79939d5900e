"""Term counts are stored narrow and a large first build gets large pages; old indexes work.

A new base segment holds each keyword mode's ``tfs`` as uint8 (uint16 or int32 only when a
count needs it); a new SQLite file whose first build brings much text gets 64 KB pages.
Indexes written before (int32 counts, 4 KB pages) open, search, update and compact
exactly as new ones do.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import ctxselect as cs
from ctxselect.index import merge
from ctxselect.ingest import content_hash
from ctxselect.retrieve import _sparse
from ctxselect.stores.embedded import files, pages
from ctxselect.stores.embedded.sqlite import SQLiteStore
from ctxselect.types import Document

MODES = ("bm25", "tfidf", "tfidf-sum")
SPEC = cs.ChunkSpec(chunker="paragraph", size=60, tokenizer="chars4")
WORDS = [f"{a}{b}" for a in ("amy", "bor", "cel", "dun", "eph", "fos") for b in ("lo", "ra", "te")]


def _docs(n: int, seed: int, repeat: int = 0) -> list[Document]:
    """``n`` documents of Zipf-ish words; document 0 repeats one word ``repeat`` times."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        paragraphs = [
            " ".join(rng.choices(WORDS, weights=range(len(WORDS), 0, -1), k=rng.randint(3, 40)))
            for _ in range(rng.randint(1, 4))
        ]
        if i == 0 and repeat:
            paragraphs.append(" ".join(["celte"] * repeat))
        text = "\n\n".join(paragraphs)
        docs.append(Document(f"d{i:03d}", text, source="t", content_hash=content_hash("", text)))
    return docs


QUERIES = {f"q{i}": " ".join(random.Random(i).choices(WORDS, k=1 + i % 4)) for i in range(40)}


def _results(index: Path) -> dict[str, dict[str, list[tuple[str, float]]]]:
    with cs.open_index(index) as idx:
        return {
            mode: {
                q: [(h.chunk_id, h.score) for h in hits]
                for q, hits in idx.search_many(QUERIES, 50, mode).items()
            }
            for mode in MODES
        }


def _explained(index: Path) -> list[float]:
    with cs.open_index(index) as idx:
        hits = idx.search(QUERIES["q3"], 5, "bm25")
        return [idx.explain(QUERIES["q3"], h.chunk_id, "bm25").score for h in hits]


def _base(index: Path) -> dict[str, dict[str, np.ndarray]]:
    store = SQLiteStore(index)
    try:
        arrays, _ = files.load_base(index, store.read_manifest()["base"])
    finally:
        store.close()
    return arrays


def _tfs_dtypes(index: Path) -> dict[str, str]:
    return {mode: str(array["tfs"].dtype) for mode, array in _base(index).items()}


def _page_size(index: Path) -> int:
    conn = sqlite3.connect(index / "index.sqlite")
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def _change(index: Path, docs: list[Document], repeat: int = 0) -> None:
    """Replace two documents (one with a word ``repeat`` times), add one, remove one."""
    new = _docs(3, seed=99, repeat=repeat)
    changed = [
        Document(docs[1].doc_id, new[0].text, source="t", content_hash=new[0].content_hash),
        Document(docs[2].doc_id, new[1].text, source="t", content_hash=new[1].content_hash),
        Document("d999", new[2].text, source="t", content_hash=new[2].content_hash),
    ]
    cs.add_documents(changed, index, compact_fraction=None)
    cs.remove_documents([docs[3].doc_id], index, compact_fraction=None)


@pytest.fixture
def old_format(monkeypatch: pytest.MonkeyPatch):
    """Write indexes as before narrow counts: int32 ``tfs`` and 4 KB SQLite pages."""

    def as_int32(tfs: np.ndarray) -> np.ndarray:
        return np.asarray(tfs, dtype=np.int32)

    def build(index: Path, docs: list[Document]) -> None:
        with monkeypatch.context() as m:
            m.setattr(_sparse, "narrow_counts", as_int32)
            m.setattr(merge, "narrow_counts", as_int32)
            cs.add_documents(docs, index, chunk=SPEC)

    return build


@pytest.fixture
def much_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the test corpora count as much text (the real threshold is 16M characters)."""
    monkeypatch.setattr(pages, "LARGE_TEXT", 1000)


def test_a_new_index_stores_counts_as_uint8(tmp_path: Path) -> None:
    cs.add_documents(_docs(30, seed=1), tmp_path / "ix", chunk=SPEC)
    assert _tfs_dtypes(tmp_path / "ix") == dict.fromkeys(MODES, "uint8")
    assert _page_size(tmp_path / "ix") == 4096  # little text: a small file


def test_a_first_build_with_much_text_gets_large_pages_and_searches_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _docs(30, seed=4)
    small, large = tmp_path / "small", tmp_path / "large"
    cs.add_documents(docs, small, chunk=SPEC)
    with monkeypatch.context() as m:
        m.setattr(pages, "LARGE_TEXT", 1000)
        cs.add_documents(docs, large, chunk=SPEC)
        assert _page_size(large) == pages.LARGE_PAGES and _page_size(small) == 4096
        assert _results(large) == _results(small)
        for index in (small, large):
            _change(index, docs)
            cs.compact_index(index)
    assert _page_size(large) == pages.LARGE_PAGES and _page_size(small) == 4096
    assert _results(large) == _results(small)
    assert cs.verify_index(large).ok and cs.verify_index(small).ok


def test_only_an_empty_file_that_nobody_else_has_open_changes_its_pages(
    tmp_path: Path, much_text: None
) -> None:
    docs = _docs(30, seed=5)
    cs.add_documents(docs[:1], tmp_path / "ix", chunk=SPEC)
    store = SQLiteStore(tmp_path / "ix")
    try:
        assert not pages.fit(store._conn, docs)  # it holds documents
    finally:
        store.close()
    store = SQLiteStore(tmp_path / "new", create=True)
    other = sqlite3.connect(tmp_path / "new" / "index.sqlite")
    try:
        other.execute("SELECT count(*) FROM documents").fetchone()
        assert not pages.fit(store._conn, docs)  # another connection has the file open
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
        other.close()
        assert pages.fit(store._conn, docs)
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()
    assert _page_size(tmp_path / "new") == pages.LARGE_PAGES


def test_an_old_index_opens_searches_updates_and_compacts_as_a_new_one(
    tmp_path: Path, old_format
) -> None:
    docs = _docs(30, seed=2)
    old, new = tmp_path / "old", tmp_path / "new"
    old_format(old, docs)
    cs.add_documents(docs, new, chunk=SPEC)
    assert _tfs_dtypes(old) == dict.fromkeys(MODES, "int32") and _page_size(old) == 4096
    expected = _results(new)
    assert sum(len(hits) for hits in expected["bm25"].values()) > 100
    assert _results(old) == expected
    assert _explained(old) == _explained(new)
    for index in (old, new):
        _change(index, docs)
    assert _results(old) == _results(new)  # int32 base, narrow deltas
    for index in (old, new):
        cs.compact_index(index)
    assert _results(old) == _results(new)
    assert _tfs_dtypes(old) == dict.fromkeys(MODES, "uint8")  # compaction narrows them
    assert _page_size(old) == 4096  # an existing file keeps its pages


def test_a_count_above_255_widens_the_counts_at_compaction_as_in_a_rebuild(
    tmp_path: Path,
) -> None:
    docs = _docs(30, seed=3)
    index, rebuilt = tmp_path / "ix", tmp_path / "rebuilt"
    cs.add_documents(docs, index, chunk=SPEC)
    assert _tfs_dtypes(index) == dict.fromkeys(MODES, "uint8")
    _change(index, docs, repeat=300)  # a uint16 delta merged into a uint8 base
    cs.compact_index(index)
    with cs.open_index(index) as idx:
        cs.add_documents(
            [idx.store.get_document(d) for d in sorted(idx.store.doc_hashes())],
            rebuilt,
            chunk=SPEC,
        )
    assert _tfs_dtypes(index) == _tfs_dtypes(rebuilt) == dict.fromkeys(MODES, "uint16")
    assert _results(index) == _results(rebuilt)
    with cs.open_index(index) as idx:
        top = idx.explain("celte", idx.search("celte", 1, "bm25")[0].chunk_id, "bm25")
    assert top.terms[0].tf == 300.0

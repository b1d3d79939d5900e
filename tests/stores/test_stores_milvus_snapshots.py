"""Snapshots of a Milvus index: rows read per hit above a size, and reloads that reuse.

As the embedded store: above ``TEXTS_IN_MEMORY_MAX`` chunks a snapshot keeps row ids
only and reads each hit's chunk from the server; a reload on the same base reuses the
previous snapshot's base arrays and chunks and reads only what changed.
"""

from __future__ import annotations

from typing import Any

import pytest
from milvus_settings import served_bm25
from store_kinds import milvus_uri

import ctxselect as cs
from ctxselect.ingest import content_hash
from ctxselect.stores import open_store
from ctxselect.stores.milvus import snapshots
from ctxselect.stores.milvus.lazy import MilvusLazyRows
from ctxselect.stores.milvus.serving import SERVE_ENV
from ctxselect.types import ChunkTable, Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=24, tokenizer="chars4")
TEXTS = {
    "cache": "The cache evicts old entries.\n\nEviction runs when memory runs low.",
    "retry": "Failed requests are retried.\n\nBackoff grows with every retry.",
    "index": "An inverted index maps terms.\n\nPostings list the documents of a term.",
    "vector": "Dense vectors are compared by cosine.\n\nCosine ignores the vector length.",
}
QUERIES = ["cache eviction", "retried requests backoff", "postings of a term", "cosine"]


def _docs(texts: dict[str, str]) -> list[Document]:
    return [Document(d, t, source=d, content_hash=content_hash("", t)) for d, t in texts.items()]


@pytest.fixture
def uri(milvus_server: Any, tmp_path: Any) -> str:
    made = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), made, chunk=SPEC, embedder="hash", bm25=served_bm25())
    queue = {"queue": "Queues decouple producers.\n\nConsumers pull."}
    cs.add_documents(_docs(queue), made, compact_fraction=None)
    cs.remove_documents(["retry"], made, compact_fraction=None)  # a delta and a dead row
    return made


def test_lazy_rows_read_the_same_chunks(uri: str) -> None:
    store = open_store(uri)
    eager, lazy = store.snapshot(eager=True), store.snapshot(eager=False)
    assert isinstance(eager.rows, ChunkTable) and isinstance(lazy.rows, MilvusLazyRows)
    assert len(lazy.rows) == len(eager.rows) and len(eager.rows) > 8
    live = dict(eager.rows.row_of)
    assert live and all(not c.startswith("retry#") for c in live)
    for chunk_id, row in live.items():
        assert lazy.rows.row_of[chunk_id] == row and lazy.rows.chunk_ids[row] == chunk_id
        assert lazy.rows.hit(row, 1, 0.5) == eager.rows.hit(row, 1, 0.5)
    assert lazy.rows.row_of.get("retry#0") is None and "retry#0" not in lazy.rows.row_of
    assert lazy.rows.all_doc_ids() == list(eager.rows.doc_ids)  # one query, dead rows too
    store.close()


@pytest.mark.parametrize("serve", ["bm25,dense,hybrid", "none"])
def test_a_large_index_searches_with_rows_read_per_hit(
    uri: str, monkeypatch: pytest.MonkeyPatch, serve: str
) -> None:
    monkeypatch.setenv(SERVE_ENV, serve)
    with cs.open_index(uri) as idx:
        expected = {m: {q: idx.search(q, 4, m) for q in QUERIES} for m in ("bm25", "hybrid")}
        assert isinstance(idx._snapshot().rows, ChunkTable)
        served = type(idx.retriever("hybrid")).__name__ == "MilvusHybridSearcher"
        assert served == (serve != "none")
    monkeypatch.setattr(snapshots, "TEXTS_IN_MEMORY_MAX", 3)
    with cs.open_index(uri) as idx:
        assert isinstance(idx._snapshot().rows, MilvusLazyRows)
        for mode, found in expected.items():
            assert {q: idx.search(q, 4, mode) for q in QUERIES} == found, mode
        assert any(found for found in expected["bm25"].values())
        assert idx.get_chunk("cache#0").text.startswith("The cache")


def test_a_reload_reads_only_what_changed(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(uri)
    first = store.snapshot()
    lease = {"lock": "A lease is the writer lock.\n\nIt expires."}
    cs.add_documents(_docs(lease), uri, compact_fraction=None)
    groups: list[str] = []
    fetched: list[str] = []
    read_group, chunk_rows = snapshots.read_group, store.chunk_rows

    def spy_group(s: Any, group: str) -> Any:
        groups.append(group)
        return read_group(s, group)

    def spy_rows(generation: int, expr: str = "", live: bool = True) -> list[dict]:
        fetched.append(expr)
        return chunk_rows(generation, expr, live)

    monkeypatch.setattr(snapshots, "read_group", spy_group)
    monkeypatch.setattr(store, "chunk_rows", spy_rows)
    again = store.snapshot(previous=first)
    assert not [g for g in groups if g.startswith("base/")] and groups  # the deltas only
    assert fetched and all(e.startswith("id in [") and e.count(",") < 4 for e in fetched)
    monkeypatch.undo()
    fresh = store.snapshot()
    assert isinstance(again.rows, ChunkTable) and isinstance(fresh.rows, ChunkTable)
    assert again.rows == fresh.rows and dict(again.rows.row_of) == dict(fresh.rows.row_of)
    assert again.rowids.tolist() == fresh.rowids.tolist()
    for mode, seg in fresh.segments.items():
        assert sorted(seg.base) == sorted(again.segments[mode].base)
        assert len(seg.deltas) == len(again.segments[mode].deltas)
    store.close()


def test_served_modes_never_download_their_arrays(
    uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cs.open_index(uri) as idx:
        for mode in ("bm25", "dense", "hybrid"):
            assert idx.search("cache eviction", 2, mode)
        base = {m: s.base for m, s in idx._snapshot().segments.items()}
    assert all(isinstance(b, snapshots.LazyArrays) for b in base.values())
    unread = [a for b in base.values() for a in b._arrays.values() if hasattr(a, "ids")]
    assert unread and all(a._array is None for a in unread)
    monkeypatch.setenv(SERVE_ENV, "none")
    with cs.open_index(uri) as idx:  # ranked here: the arrays are read on first use
        assert idx.search("cache eviction", 2, "bm25")[0].doc_id == "cache"
        weights = idx._snapshot().segments["bm25"].base
        assert isinstance(weights, snapshots.LazyArrays) and len(weights["rows"])

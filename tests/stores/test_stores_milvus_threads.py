"""Concurrent searches on one opened index, on both stores (bench/milvus_scale.py runs 8).

Above ``TEXTS_IN_MEMORY_MAX`` chunks a search reads its hits' rows from the store while
pinned to its generation; threads searching the same opened index at once once
deadlocked there (the reader's reload lock and the store's read lock taken in opposite
orders). Each search must finish, and equal the same search run alone.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest
from milvus_settings import served_bm25
from store_kinds import STORE_KINDS

import ctxselect as cs
from ctxselect.api import generation
from ctxselect.ingest import content_hash
from ctxselect.stores.embedded import sqlite
from ctxselect.stores.milvus import snapshots
from ctxselect.types import ChunkTable, Document

WORDS = [
    "cache",
    "eviction",
    "lease",
    "retry",
    "vector",
    "index",
    "postings",
    "segment",
    "commit",
    "tomb",
]
QUERIES = [f"{a} {b}" for a in WORDS for b in WORDS[:4]]


def _docs() -> list[Document]:
    out = []
    for i in range(40):
        text = " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 12)) + f" doc{i}."
        out.append(Document(f"d{i}", text, source=f"d{i}", content_hash=content_hash("", text)))
    return out


@pytest.mark.parametrize("kind", STORE_KINDS, ids=[k.name for k in STORE_KINDS])
def test_threads_searching_a_lazy_index_all_finish(
    kind: Any, request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = kind.new_uri(tmp_path, *(request.getfixturevalue(f) for f in kind.fixtures))
    cs.add_documents(_docs(), uri, chunk=cs.ChunkSpec(tokenizer="chars4"), bm25=served_bm25())
    with cs.open_index(uri) as idx:
        alone = {q: idx.search(q, 3) for q in QUERIES}
    monkeypatch.setattr(sqlite, "TEXTS_IN_MEMORY_MAX", 5)
    monkeypatch.setattr(snapshots, "TEXTS_IN_MEMORY_MAX", 5)
    monkeypatch.setattr(generation, "RELOAD_CHECK_SECONDS", 0.0)  # every call looks
    with cs.open_index(uri) as idx:
        assert not isinstance(idx._snapshot().rows, ChunkTable)
        pool = concurrent.futures.ThreadPoolExecutor(8)
        futures = [(q, pool.submit(idx.search, q, 3)) for q in QUERIES * 3]
        _, pending = concurrent.futures.wait([f for _, f in futures], timeout=60)
        pool.shutdown(wait=not pending, cancel_futures=True)
        assert not pending, "searches of one index from 8 threads did not finish"
        assert all(f.result() == alone[q] for q, f in futures)

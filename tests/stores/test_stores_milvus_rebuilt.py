"""An index whose collections are dropped and built again under the same URI and NAME.

Generations restart at 1, so the committed generation alone cannot tell the new index
from the old one. Each created index carries a random identity in its layout row;
``MilvusStore.replaced()`` compares it, so a reader opens the index again (as over a
folder deleted and rebuilt), and a writer opened before the rebuild refuses to commit
what it prepared against the old index.
"""

from __future__ import annotations

from typing import Any

import pytest
from milvus_settings import served_bm25
from store_kinds import milvus_uri

import ctxselect as cs
from ctxselect.api import generation
from ctxselect.errors import IndexNotFoundError, IndexWriteError
from ctxselect.ingest import content_hash
from ctxselect.stores import open_store
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import snapshots
from ctxselect.stores.milvus.layout import LAYOUT_ID
from ctxselect.stores.milvus.lazy import MilvusLazyRows
from ctxselect.stores.milvus.serving import SERVE_ENV
from ctxselect.types import ChunkTable, Document, Hit

SPEC = cs.ChunkSpec(chunker="paragraph", size=24, tokenizer="chars4")
OLD = {
    "cache": "The cache evicts old entries.\n\nEviction runs when memory runs low.",
    "retry": "Failed requests are retried.\n\nBackoff grows with every retry.",
}
OLD_MORE = {"index": "An inverted index maps terms.\n\nPostings list the cache terms."}
NEW = {  # "cache" again, with other text: a mixed read shows an old text under a new id
    "cache": "Cache lines hold bytes of memory.\n\nA cache miss reads the memory bus.",
    "queue": "Queues decouple producers.\n\nConsumers pull from the cache queue.",
}


def _docs(texts: dict[str, str]) -> list[Document]:
    return [Document(d, t, source=d, content_hash=content_hash("", t)) for d, t in texts.items()]


def _drop(uri: str) -> None:
    """Remove the index as another process would: drop every collection it has."""
    address = mc.parse_uri(uri)
    client = mc.connect(address)
    try:
        for name in client.list_collections():
            if name == address.name or name.startswith(address.name + "__"):
                client.drop_collection(name)
    finally:
        client.close()


def _build(uri: str, texts: dict[str, str], *more: dict[str, str]) -> None:
    cs.add_documents(_docs(texts), uri, chunk=SPEC, embedder="hash", bm25=served_bm25())
    for extra in more:  # one more generation each
        cs.add_documents(_docs(extra), uri, compact_fraction=None)


def _only_new(hits: list[Hit]) -> None:
    assert hits
    for hit in hits:
        assert hit.doc_id in NEW, hit
        assert hit.text == NEW[hit.doc_id][hit.start : hit.end], hit  # never an old row


@pytest.mark.parametrize("old_generations", [1, 2])
@pytest.mark.parametrize("lazy", [False, True], ids=["texts-in-memory", "rows-per-hit"])
@pytest.mark.parametrize("serve", ["bm25,dense,hybrid", "none"])
def test_a_reader_sees_the_index_built_again_under_its_uri(
    milvus_server: Any,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    serve: str,
    lazy: bool,
    old_generations: int,
) -> None:
    monkeypatch.setenv(SERVE_ENV, serve)
    if lazy:
        monkeypatch.setattr(snapshots, "TEXTS_IN_MEMORY_MAX", 1)
    uri = milvus_uri(tmp_path, milvus_server)
    _build(uri, OLD, *([OLD_MORE] if old_generations == 2 else []))
    with cs.open_index(uri) as idx:
        assert {h.doc_id for h in idx.search("cache eviction", 10, "bm25")} <= {"cache", "index"}
        rows = idx._snapshot().rows
        assert isinstance(rows, MilvusLazyRows if lazy else ChunkTable)
        _drop(uri)
        _build(uri, NEW)  # a second store object; generations restart at 1
        for mode in ("bm25", "dense", "hybrid"):
            _only_new(idx.search("cache memory", 10, mode))
        chunk = idx.get_chunk("cache#0")
        assert chunk.text == NEW["cache"][chunk.start : chunk.end]
        assert {h.doc_id for h in idx.search("consumers queue", 10, "bm25")} == {"queue"}


def test_a_reader_of_a_removed_index_says_so_then_reads_the_rebuilt_one(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    _build(uri, OLD)
    with cs.open_index(uri) as idx:
        assert idx.search("cache eviction", 3)
        _drop(uri)
        with pytest.raises(IndexNotFoundError, match=f"no index at {uri}: create one"):
            idx.search("cache eviction", 3)  # not the deleted index's hits, not "no match"
        _build(uri, NEW)
        _only_new(idx.search("cache memory", 10))


def test_a_search_inside_the_reload_window_of_a_removed_index_says_it_is_gone(
    milvus_server: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reader looks for a replaced index at most every RELOAD_CHECK_SECONDS; a search
    # in that window reaches the dropped collections themselves. It said "cannot reach
    # the Milvus server" (a flake of the test above, when the drop took under 20 ms).
    uri = milvus_uri(tmp_path, milvus_server)
    _build(uri, OLD)
    with cs.open_index(uri) as idx:
        assert idx.search("cache eviction", 3, "bm25")
        monkeypatch.setattr(generation, "RELOAD_CHECK_SECONDS", 3600.0)
        idx._recheck()
        assert idx.search("cache eviction", 3, "bm25")  # the check, then an hour without
        _drop(uri)
        with pytest.raises(IndexNotFoundError, match=f"no index at {uri}: create one"):
            idx.search("cache eviction", 3, "bm25")
        _build(uri, NEW)
        _only_new(idx.search("cache memory", 10, "bm25"))  # the failed call set a recheck


def test_an_index_made_before_identities_is_still_told_apart(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    _build(uri, OLD)
    store = open_store(uri)
    old = {k: v for k, v in store.read_layout().items() if k != "created"}
    store._put_meta([store.meta_row(LAYOUT_ID, "layout", info=mc.dumps(old))], upsert=True)
    store.close()
    with cs.open_index(uri) as idx:
        assert not idx.store.replaced()  # no identity on either side: the same index
        _drop(uri)
        _build(uri, NEW)
        assert idx.store.replaced()
        _only_new(idx.search("cache memory", 10))


def test_a_writer_opened_before_a_rebuild_refuses_to_commit(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    _build(uri, OLD, OLD_MORE)  # generation 2: its manifests are cached below
    writer = open_store(uri)
    old_manifest = writer.read_manifest()
    assert writer.manifest_at(1)["counts"]["documents"] == 2
    _drop(uri)
    _build(uri, NEW, {"extra": "Extra notes on memory."})  # generation 2 of the new index
    before = open_store(uri)
    kept = (before.generation(), before.read_manifest(), before.doc_hashes())
    try:
        with writer.lock(), pytest.raises(IndexWriteError, match="built again") as err:
            writer.commit_settings({"note": "prepared against the old index"})
        assert "\n" not in str(err.value) and "run the command again" in str(err.value)
        assert (before.generation(), before.read_manifest(), before.doc_hashes()) == kept
        assert kept[1]["counts"] != old_manifest["counts"]
        assert before.verify()[1] == []
    finally:
        writer.close()
        before.close()

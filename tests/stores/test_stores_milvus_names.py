"""A Milvus index touches only its own collections, and says so when they were damaged.

An index ``NAME`` keeps ``NAME``, ``NAME__meta`` and ``NAME__denseDIM``: names ending so
are refused, a collection that merely looks like one of ours is left alone, and a search
of an index whose rows were deleted behind its back is an error, not "no match".
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from milvus_settings import served_bm25
from store_kinds import milvus_uri

import ctxselect as cs
from ctxselect.errors import ConfigError, IndexCorruptError
from ctxselect.ingest import content_hash
from ctxselect.stores import open_store
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus.layout import LAYOUT_ID
from ctxselect.stores.milvus.store import MilvusStore
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=8, tokenizer="chars4")


def _docs(**texts: str) -> list[Document]:
    return [Document(d, t, source=d, content_hash=content_hash("", t)) for d, t in texts.items()]


def _store(uri: str) -> MilvusStore:
    found = open_store(uri)
    assert isinstance(found, MilvusStore)
    return found


@pytest.mark.parametrize("suffix", ["__meta", "__dense8", "__dense256"])
def test_a_name_of_another_index_s_collection_is_refused(suffix: str) -> None:
    with pytest.raises(ConfigError, match=f"ending in '{suffix}' is refused.*pick a NAME"):
        mc.parse_uri(f"milvus://127.0.0.1:19530/qq{suffix}")
    for fine in ("qq", "qq__docs", "qq__dense", "qq__dense8x", "dense8"):
        assert mc.parse_uri(f"milvus://127.0.0.1:19530/{fine}").name == fine


def test_a_name_too_long_says_so_not_that_its_characters_are_wrong() -> None:
    assert mc.parse_uri("milvus://127.0.0.1:19530/" + "a" * 201).name == "a" * 201
    with pytest.raises(ConfigError, match=r"NAME has 250 characters, more than the 201") as bad:
        mc.parse_uri("milvus://127.0.0.1:19530/" + "a" * 250)
    assert "letters, digits" not in str(bad.value)


def test_an_index_being_created_by_another_process_is_waited_for(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    address = mc.parse_uri(uri)
    client = mc.connect(address)
    schema, index = ms.chunk_schema(client)  # the other creator's first collection
    client.create_collection(address.name, schema=schema, index_params=index)

    def finish() -> None:  # ... and the rest of its _create, a moment later
        schema, index = ms.meta_schema(client)
        client.create_collection(address.meta, schema=schema, index_params=index)
        layout = {"layout": ms.LAYOUT_VERSION, "bm25": ms.DEFAULT_BM25, "dense": []}
        row = MilvusStore.meta_row(LAYOUT_ID, "layout", info=mc.dumps(layout))
        client.upsert(address.meta, [row])

    timer = threading.Timer(1.0, finish)
    timer.start()
    try:
        report = cs.add_documents(_docs(a="alpha words"), uri, chunk=SPEC)
    finally:
        timer.join()
        client.close()
    assert report.added == 1 and report.generation == 1
    store = _store(uri)
    try:
        assert store.verify()[1] == [] and store.doc_hashes().keys() == {"a"}
    finally:
        store.close()


def test_a_collection_named_like_ours_is_left_alone(milvus_server: Any, tmp_path: Any) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    address = mc.parse_uri(uri)
    client = mc.connect(address)
    foreign = ms.dense_name(address, 8)  # someone else's, named like our 8-d vectors
    try:
        schema, index = ms.dense_schema(client, 8)
        client.create_collection(foreign, schema=schema, index_params=index)
        row = {"id": 7, "chunk_id": "x#0", "born": 99, "vector": [0.5] * 8, "body": "x"}
        client.insert(foreign, [row])
        cs.add_documents(_docs(a="alpha one\n\nalpha two", b="beta"), uri, chunk=SPEC)
        cs.add_documents(_docs(c="gamma"), uri, chunk=SPEC, compact_fraction=None)
        cs.add_documents(_docs(a="alpha again"), uri, chunk=SPEC, compact_fraction=None)
        cs.compact_index(uri)  # purges what older generations saw
        left = client.query(foreign, filter="id >= 0", output_fields=["born"])
        assert [int(r["born"]) for r in left] == [99]  # neither a leftover nor purged
        store = _store(uri)
        try:
            assert store.verify()[1] == [] and store.dense_collections() == []
            assert "dense" not in store.served_modes(store.snapshot())
        finally:
            store.close()
    finally:
        client.close()


def test_a_vector_collection_is_recorded_and_an_old_index_keeps_its_own(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    texts = {"a": "alpha one\n\nalpha two", "b": "beta words"}
    cs.add_documents(_docs(**texts), uri, chunk=SPEC, embedder="hash", bm25=served_bm25())
    store = _store(uri)
    try:
        (own,) = store.dense_collections()
        assert store.read_layout()["dense"] == [own] and own.startswith(store.address.name)
        old = {k: v for k, v in store.read_layout().items() if k != "dense"}
        store._put_meta([store.meta_row(LAYOUT_ID, "layout", info=mc.dumps(old))], upsert=True)
    finally:
        store.close()
    store = _store(uri)  # as made before the layout kept the list
    try:
        assert store.dense_collections() == [own]
        assert {"bm25", "dense"} <= set(store.served_modes(store.snapshot()))
    finally:
        store.close()
    cs.add_documents(_docs(c="gamma words"), uri, chunk=SPEC, compact_fraction=None)
    store = _store(uri)
    try:
        assert store.read_layout()["dense"] == [own]  # the first commit records it
    finally:
        store.close()


def test_searching_an_index_whose_rows_were_deleted_is_an_error(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(a="alpha one", b="beta two"), uri, chunk=SPEC, bm25=served_bm25())
    with cs.open_index(uri) as idx:
        assert idx.search("alpha", 5)[0].doc_id == "a"
        assert idx.search("nothing", 5) == []  # a query that matches nothing still says so
    store = _store(uri)
    try:
        store._client.delete(store.address.name, filter="id >= 0")  # behind the index's back
    finally:
        store.close()
    with cs.open_index(uri) as idx, pytest.raises(IndexCorruptError, match="verify --index"):
        idx.search("alpha", 5)

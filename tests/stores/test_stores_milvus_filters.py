"""Filters on a Milvus index: served modes rank allowed rows on the server; fields stored.

The same corpus indexed in a folder and in Milvus: filtered searches return the folder's
documents (bm25 served: Milvus's analysis can order them differently, so sets are
compared), ``where`` reads the user fields the Milvus store keeps with each document, and
a narrow filter reaches chunks far below the unfiltered top k.
"""

from __future__ import annotations

from typing import Any

import pytest
from milvus_settings import served_bm25
from store_kinds import milvus_uri

import ctxselect as cs
from _support.filter_corpus import QUERY, write_corpus
from ctxselect.errors import ConfigError
from ctxselect.stores import ServingStore


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: Any) -> Any:
    return write_corpus(tmp_path_factory.mktemp("milvus-filters") / "corpus")


@pytest.fixture(scope="module")
def milvus_index(milvus_server: Any, tmp_path_factory: Any, corpus: Any) -> str:
    """The corpus indexed once in Milvus, bm25 served (the tests only read it)."""
    uri = milvus_uri(tmp_path_factory.mktemp("milvus-filters-index"), milvus_server)
    cs.index_paths([corpus], uri, bm25=served_bm25())
    return uri


def test_served_and_client_side_searches_filter_inside_retrieval(
    milvus_index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cs.open_index(milvus_index) as idx:
        assert isinstance(idx.store, ServingStore)
        assert "bm25" in idx.store.served_modes(idx._snapshot())
        top = idx.search(QUERY, 10)
        assert not any(h.doc_id.startswith("howto/") for h in top)
        hits = idx.search(QUERY, 10, include=["howto/"])
        assert len(hits) == 10 and all(h.doc_id.startswith("howto/") for h in hits)
        assert [h.rank for h in hits] == list(range(1, 11))
        drafts = idx.search(QUERY, 10, where=["status=draft", "section=guide"])
        assert sorted(h.doc_id for h in drafts) == [f"howto/h{i:02d}.md" for i in (0, 3, 6, 9)]
        assert idx.info().fields == ("kind", "language", "path", "title", "section", "status")
        assert idx.filter_note(exclude=["*"]) == "exclude '*' leaves none of the 75 documents"
        with pytest.raises(ConfigError, match="where key 'venue' is not stored"):
            idx.search(QUERY, where=["venue=x"])
    monkeypatch.setenv("CTXSELECT_MILVUS_SERVE", "none")  # the client-side retrievers
    with cs.open_index(milvus_index) as local:
        kept = local.search(QUERY, 10, include=["howto/"])
        assert {h.doc_id for h in kept} == {h.doc_id for h in hits}
        code = local.search(QUERY, 10, where=["language=python"])
        assert [h.doc_id for h in code] == ["src/manage.py"]


def test_a_wide_filter_goes_to_the_server_as_the_ids_it_blocks(
    milvus_index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxselect.stores.milvus import serving

    with cs.open_index(milvus_index) as idx:
        full = idx.search(QUERY, 10)
        gone = full[0].doc_id
        # allowed rows over the cap, blocked rows under it: one server search, no deepening
        monkeypatch.setattr(serving, "_NOT_IN_MAX", 5)

        def deepened(*_: Any) -> Any:
            raise AssertionError("a filter that blocks few rows must not search deeper")

        monkeypatch.setattr(serving, "deepened", deepened)
        hits = idx.search(QUERY, 10, exclude=[gone])
        assert len(hits) == 10 and gone not in {h.doc_id for h in hits}
        assert [h.chunk_id for h in hits[:5]] == [h.chunk_id for h in full if h.doc_id != gone][:5]


def test_a_filter_on_rows_read_per_hit_reads_every_doc_id_in_one_query(
    milvus_index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxselect.stores.milvus import client as mc
    from ctxselect.stores.milvus import snapshots
    from ctxselect.stores.milvus.lazy import MilvusLazyRows

    with cs.open_index(milvus_index) as eager:
        expected = eager.search(QUERY, 10, include=["howto/"], where=["status=draft"])
    monkeypatch.setattr(snapshots, "TEXTS_IN_MEMORY_MAX", 0)  # rows read per hit
    with cs.open_index(milvus_index) as idx:
        rows = idx._snapshot().rows
        assert isinstance(rows, MilvusLazyRows) and len(rows) > 50
        exprs: list[str] = []
        query_all = mc.query_all

        def counted(client: Any, collection: str, expr: str, fields: Any) -> list[dict]:
            exprs.append(expr)
            return query_all(client, collection, expr, fields)

        monkeypatch.setattr(mc, "query_all", counted)
        hits = idx.search(QUERY, 10, include=["howto/"], where=["status=draft"])
        assert hits == expected and hits
        per_row = [e for e in exprs if e.startswith("id == ")]
        assert len(per_row) <= len(hits)  # hits only: the filter read no row by itself

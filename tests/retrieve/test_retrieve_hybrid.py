"""HybridRetriever: the fusion of its two sides, persisted and explained."""

from __future__ import annotations

from itertools import pairwise

import pytest

from _support.five_notes import QUERY, five_notes_table
from ctxselect.config import FuseSpec
from ctxselect.embed import HashEmbedder
from ctxselect.errors import ConfigError
from ctxselect.retrieve import MODES, BM25Retriever, HybridRetriever, Retriever
from ctxselect.retrieve.fuse import fuse


def _hybrid(spec: FuseSpec | None = None) -> HybridRetriever:
    return HybridRetriever.build(five_notes_table(), HashEmbedder(64), spec)


def test_hybrid_equals_fusing_its_sides() -> None:
    hybrid = _hybrid(FuseSpec(k=60))
    assert isinstance(hybrid, Retriever) and MODES.get("hybrid").retriever is HybridRetriever
    table = hybrid.table
    kw = [(table.row_of[h.chunk_id], h.score) for h in hybrid.keyword.search(QUERY, 5)]
    dn = [(table.row_of[h.chunk_id], h.score) for h in hybrid.dense.search(QUERY, 5)]
    want = [table.chunk_ids[row] for row, _ in fuse(kw, dn, FuseSpec(k=60))]
    hits = hybrid.search(QUERY, 5)
    assert [h.chunk_id for h in hits] == want
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in pairwise(hits))


def test_weight_zero_is_the_keyword_order_and_one_the_dense_order() -> None:
    keyword_only = _hybrid(FuseSpec("convex", norm="zscore", weight=0.0))
    dense_only = keyword_only.with_spec(FuseSpec("convex", norm="zscore", weight=1.0))
    kw = [h.chunk_id for h in keyword_only.keyword.search(QUERY, 5)]
    dn = [h.chunk_id for h in keyword_only.dense.search(QUERY, 5)]
    assert [h.chunk_id for h in keyword_only.search(QUERY, 5)][: len(kw)] == kw
    assert [h.chunk_id for h in dense_only.search(QUERY, 5)] == dn


def test_search_many_matches_search_and_arrays_round_trip() -> None:
    hybrid = _hybrid(FuseSpec("convex", weight=0.3))
    queries = {"a": QUERY, "b": "clock power", "c": "   "}
    many = hybrid.search_many(queries, 3)
    assert many["a"] == hybrid.search(QUERY, 3) and many["b"] == hybrid.search("clock power", 3)
    loaded = HybridRetriever.load(
        five_notes_table(), hybrid.arrays(), HashEmbedder(64), FuseSpec("convex", weight=0.3)
    )
    assert isinstance(loaded.keyword, BM25Retriever)
    assert loaded.search_many(queries, 3) == many


def test_explain_gives_both_sides() -> None:
    hybrid = _hybrid()
    explanation = hybrid.explain(QUERY, "note2#0")
    assert explanation.mode == "hybrid"
    assert explanation.score == pytest.approx(hybrid.search(QUERY, 1)[0].score)
    assert (
        "keyword (bm25): rank 1" in explanation.note and "dense (dense): rank" in explanation.note
    )
    assert {t.term for t in explanation.terms} >= {"reset", "synchron", "metast"}


def test_sides_over_different_tables_are_refused() -> None:
    other = HybridRetriever.build(five_notes_table(), HashEmbedder(64))
    from ctxselect.types import Chunk, ChunkTable

    small = BM25Retriever.build(ChunkTable.from_chunks([Chunk("x#0", "x", 0, 0, 3, "abc")]))
    with pytest.raises(ConfigError, match="same chunk table"):
        HybridRetriever(small, other.dense)

"""Row masks inside every retriever: k allowed hits even when they rank far down unfiltered.

The corpus puts 500 "release note" chunks that match the query strongly above 40 "howto"
chunks that match it weakly (and 100 that do not match it), so the howto chunks rank
501st and below: a filter applied after the top 10 would return none of them; applied
inside retrieval it returns 10.
"""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.embed import make_embedder
from ctxselect.errors import IndexMismatchError
from ctxselect.retrieve import DenseRetriever
from ctxselect.retrieve._ann import HnswIndex
from ctxselect.retrieve.dense_scores import StackedVectors
from ctxselect.retrieve.filters import RowMask, deepened
from ctxselect.retrieve.modes import retriever_for
from ctxselect.types import Chunk, ChunkTable

QUERY = "custom management command"
RELEASES, HOWTOS = 500, 40


def _chunks() -> list[Chunk]:
    texts = {
        **{
            f"releases/r{i:03d}.txt": f"custom management command custom command fix {i} build"
            for i in range(RELEASES)
        },
        **{
            f"howto/h{i:02d}.txt": (
                f"writing a management command means subclassing BaseCommand in a "
                f"module of an installed app, page {i}, with arguments and options"
            )
            for i in range(HOWTOS)
        },
        # words of the query occur in most chunks, not all: every idf is positive
        **{f"garden/g{i:03d}.txt": f"roses need sun and water, bed {i}" for i in range(100)},
    }
    return [Chunk(f"{d}#0", d, 0, 0, len(t), t) for d, t in sorted(texts.items())]


@pytest.fixture(scope="module")
def table() -> ChunkTable:
    return ChunkTable.from_chunks(_chunks())


@pytest.fixture(scope="module")
def howtos(table) -> RowMask:
    return RowMask.of(np.array([d.startswith("howto/") for d in table.doc_ids]))


def _allowed(hits, mask: RowMask, table: ChunkTable) -> list:
    return [h for h in hits if mask.allow[table.row_of[h.chunk_id]]]


@pytest.mark.parametrize("mode", ["bm25", "tfidf", "tfidf-sum"])
def test_keyword_modes_rank_only_allowed_rows(table, howtos, mode) -> None:
    retriever = retriever_for(list(_chunks()), mode)
    unfiltered = retriever.search(QUERY, 10)
    assert _allowed(unfiltered, howtos, table) == []  # post-filtering would give nothing
    everything = retriever.search(QUERY, len(table))
    expected = _allowed(everything, howtos, table)[:10]
    assert min(everything.index(h) for h in expected) >= RELEASES  # they rank 501st on
    hits = retriever.search(QUERY, 10, mask=howtos)
    assert len(hits) == 10
    assert [(h.chunk_id, h.score) for h in hits] == [(h.chunk_id, h.score) for h in expected]
    assert [h.rank for h in hits] == list(range(1, 11))
    many = retriever.search_many({"a": QUERY, "b": "options"}, 10, mask=howtos)
    assert many["a"] == hits and all(h.doc_id.startswith("howto/") for h in many["b"])


def test_a_one_term_query_is_masked_too(table, howtos) -> None:
    retriever = retriever_for(list(_chunks()), "bm25")
    hits = retriever.search("command", 5, mask=howtos)
    assert len(hits) == 5 and all(h.doc_id.startswith("howto/") for h in hits)


def _exact_over(dense: DenseRetriever, mask: RowMask, k: int) -> list[str]:
    vector = dense.embed_queries([QUERY])[0]
    scores = dense.vectors[mask.rows] @ vector
    order = np.lexsort((mask.rows, -scores))[:k]
    return [dense.table.chunk_ids[int(r)] for r in mask.rows[order]]


@pytest.mark.parametrize("ann_threshold", [10_000, 50])
def test_dense_ranks_only_allowed_rows_exact_or_through_the_graph(table, ann_threshold) -> None:
    dense = DenseRetriever.build(table, make_embedder("hash"), ann_threshold=ann_threshold)
    assert (dense.ann is not None) == (ann_threshold == 50)
    narrow = RowMask.of(np.array([d.startswith("howto/h0") for d in table.doc_ids]))
    assert narrow.share < 0.1  # the graph path falls back to exact scoring
    hits = dense.search(QUERY, 5, mask=narrow)
    assert [h.chunk_id for h in hits] == _exact_over(dense, narrow, 5)
    wide = RowMask.of(np.array([not d.endswith("7.txt") for d in table.doc_ids]))
    hits = dense.search(QUERY, 10, mask=wide)
    assert len(hits) == 10 and all(not h.doc_id.endswith("7.txt") for h in hits)
    if dense.ann is None:
        assert [h.chunk_id for h in hits] == _exact_over(dense, wide, 10)


def test_hybrid_fuses_the_allowed_rows_of_both_sides(table, howtos) -> None:
    hybrid = retriever_for(list(_chunks()), "hybrid", embedder=make_embedder("hash"))
    hits = hybrid.search(QUERY, 10, mask=howtos)
    assert len(hits) == 10 and all(h.doc_id.startswith("howto/") for h in hits)
    assert [h.rank for h in hits] == list(range(1, 11))
    keyword = retriever_for(list(_chunks()), "bm25").search(QUERY, 10, mask=howtos)
    assert {h.chunk_id for h in keyword} & {h.chunk_id for h in hits}


def test_a_mask_of_another_generation_is_refused(table) -> None:
    retriever = retriever_for(list(_chunks()), "bm25")
    wrong = RowMask.of(np.ones(3, dtype=bool))
    for query in (QUERY, "command"):  # the many-term and the one-term paths
        with pytest.raises(IndexMismatchError, match="made for 3 rows was applied to 640"):
            retriever.search(query, 5, mask=wrong)


def test_deepened_searches_deeper_until_k_allowed_hits(table, howtos):
    # for a ranking that cannot skip rows itself (Milvus with a filter too long to send)
    inner = retriever_for(list(_chunks()), "bm25")
    depths: list[int] = []

    def search(query: str, depth: int) -> list:
        depths.append(depth)
        return inner.search(query, depth)

    found = deepened(search, QUERY, 10, howtos, inner.table.row_of, limit=10_000)
    assert [h.chunk_id for h in found] == [h.chunk_id for h in inner.search(QUERY, 10, mask=howtos)]
    assert [h.rank for h in found] == list(range(1, 11))
    assert depths[0] == 10 and depths[-1] > RELEASES and depths == sorted(depths)
    capped = deepened(search, QUERY, 10, howtos, inner.table.row_of, limit=40)
    assert depths[-1] == 40 and len(capped) < 10  # the limit stops it, with what it found


def test_a_batch_under_one_mask_works_out_its_rows_once(table, monkeypatch) -> None:
    dense = DenseRetriever.build(table, make_embedder("hash"), ann_threshold=50)
    wide = RowMask.of(np.array([not d.endswith("7.txt") for d in table.doc_ids]))
    seen: list[list[bool]] = []
    walk = dense.ann.allowed_candidates

    def spy(query, k, flags):
        seen.append(flags)
        return walk(query, k, flags)

    monkeypatch.setattr(dense.ann, "allowed_candidates", spy)
    queries = {f"q{i}": f"{QUERY} page {i}" for i in range(20)}
    many = dense.search_many(queries, 10, mask=wide)
    assert len(seen) == 20 and all(flags is seen[0] for flags in seen)  # one list per batch
    assert seen[0] == wide.allow.tolist()
    for qid, query in queries.items():  # a fresh mask object each time: worked out anew
        assert dense.search(query, 10, mask=RowMask.of(wide.allow)) == many[qid]
    garden = RowMask.of(np.array([d.startswith("garden/") for d in table.doc_ids]))
    hits = dense.search(QUERY, 10, mask=garden)  # another mask: nothing of the last one kept
    assert len(hits) == 10 and all(h.doc_id.startswith("garden/") for h in hits)
    assert seen[-1] == garden.allow.tolist()


def test_rows_added_after_the_graph_are_searched_exactly_under_a_mask(table) -> None:
    built = DenseRetriever.build(table, make_embedder("hash"), ann_threshold=10_000)
    n_base = HOWTOS + 100  # garden and howto rows come first (chunk_id order), then releases
    assert all(d.startswith("releases/") for d in table.doc_ids[n_base:])
    base = np.arange(n_base)
    dense = DenseRetriever(
        table,
        built.embedder,
        StackedVectors([built.vectors[:n_base], built.vectors[n_base:]]),
        built.embedded,
        HnswIndex.build(built.vectors, base[built.embedded[:n_base]]),
        n_base,
    )
    wide = RowMask.of(np.array([not d.endswith("7.txt") for d in table.doc_ids]))
    hits = dense.search_many({"a": QUERY, "b": QUERY}, 10, mask=wide)
    assert [h.chunk_id for h in hits["a"]] == _exact_over(built, wide, 10)
    assert hits["b"] == hits["a"]

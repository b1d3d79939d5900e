"""Term counts in the narrowest integer type: same weights, same scores, no copy at load."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.errors import IndexCorruptError
from ctxselect.retrieve._sparse import index_corpus, narrow_counts, raw_arrays, raw_postings
from ctxselect.retrieve.analyze import BM25Analyzer
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.tfidf import TfidfRetriever, TfidfSumRetriever
from ctxselect.types import Chunk, ChunkTable

TEXTS = [
    "amyloid fibrils form in the brain; amyloid beta and fibrils again",
    "sepsis outcomes in the trial: sepsis, sepsis and more sepsis",
    "the brain and the trial outcomes",
    "fibrils " * 7 + "beta",
    "nothing shared here at all",
]
QUERIES = ["amyloid fibrils", "sepsis trial outcomes", "brain", "beta beta fibrils", "zzz"]
RETRIEVERS = (BM25Retriever, TfidfRetriever, TfidfSumRetriever)


def _table() -> ChunkTable:
    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t, n_tokens=3) for i, t in enumerate(TEXTS)]
    return ChunkTable.from_chunks(chunks)


@pytest.mark.parametrize(
    ("top", "dtype"),
    [(1, np.uint8), (255, np.uint8), (256, np.uint16), (65535, np.uint16), (65536, np.int32)],
)
def test_narrow_counts_picks_the_first_type_that_holds_the_largest(top, dtype) -> None:
    counts = np.array([1, 2, top], dtype=np.int64)
    narrow = narrow_counts(counts)
    assert narrow.dtype == dtype and narrow.tolist() == counts.tolist()


def test_index_corpus_stores_counts_as_uint8() -> None:
    postings = index_corpus(TEXTS, BM25Analyzer())
    assert postings.tfs.dtype == np.uint8 and int(postings.tfs.max()) == 7


@pytest.mark.parametrize("cls", RETRIEVERS, ids=lambda c: c.mode)
def test_int32_and_uint8_counts_give_the_same_weights_and_scores(cls) -> None:
    table = _table()
    built = cls.build(table)
    narrow = built.arrays()
    assert narrow["tfs"].dtype == np.uint8
    wide = {**narrow, "tfs": narrow["tfs"].astype(np.int32)}  # as indexes built before hold
    a, b = cls.load(table, narrow), cls.load(table, wide)
    assert a.postings.tfs.dtype == np.uint8 and b.postings.tfs.dtype == np.int32
    # weights computed from either (at build, compaction, or a bm25 load with other k1, b)
    from_narrow = cls.arrays_from_postings(raw_postings(raw_arrays(a.postings)))["weights"]
    from_wide = cls.arrays_from_postings(raw_postings(raw_arrays(b.postings)))["weights"]
    assert from_narrow.tobytes() == from_wide.tobytes() == narrow["weights"].tobytes()
    found = 0
    for query in QUERIES:
        hits_a, hits_b = a.search(query, 5), b.search(query, 5)
        assert hits_a == hits_b == built.search(query, 5)
        found += len(hits_a)
        for hit in hits_a:
            assert a.explain(query, hit.chunk_id) == b.explain(query, hit.chunk_id)
    assert found > 5


def test_bm25_with_other_k1_recomputes_the_same_weights_from_either_counts() -> None:
    table = _table()
    arrays = BM25Retriever.build(table).arrays()
    wide = {**arrays, "tfs": arrays["tfs"].astype(np.int32)}
    a = BM25Retriever.load(table, arrays, k1=0.9, b=0.4)
    b = BM25Retriever.load(table, wide, k1=0.9, b=0.4)
    assert a._weights.tobytes() == b._weights.tobytes() != arrays["weights"].tobytes()
    assert [a.search(q, 5) for q in QUERIES] == [b.search(q, 5) for q in QUERIES]


@pytest.mark.parametrize("cls", RETRIEVERS, ids=lambda c: c.mode)
def test_load_keeps_the_stored_counts_without_a_copy(cls) -> None:
    table = _table()
    arrays = cls.build(table).arrays()
    loaded = cls.load(table, arrays)
    assert loaded.postings.tfs.dtype == np.uint8
    assert np.shares_memory(loaded.postings.tfs, arrays["tfs"])


def test_counts_that_are_not_integers_are_a_corrupt_index() -> None:
    table = _table()
    arrays = BM25Retriever.build(table).arrays()
    with pytest.raises(IndexCorruptError, match=r"term counts as float32.*rebuild"):
        BM25Retriever.load(table, {**arrays, "tfs": arrays["tfs"].astype(np.float32)})

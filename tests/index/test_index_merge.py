"""Segment merges without re-analysis equal a fresh analysis of the live rows, array for array."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.index.merge import compact, merge_deltas, new_rows
from ctxselect.retrieve._sparse import index_corpus, raw_arrays
from ctxselect.retrieve.analyze import BM25Analyzer

ANALYZER = BM25Analyzer()
WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "the", "epsilon", "zeta"])
TEXT = st.lists(WORDS, max_size=8).map(" ".join)


def _raw(texts: list[str]) -> dict[str, np.ndarray]:
    return raw_arrays(index_corpus(texts, ANALYZER))


def _equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert set(a) == set(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


@settings(max_examples=80, deadline=None)
@given(
    base=st.lists(TEXT, max_size=8),
    deltas=st.lists(st.lists(TEXT, min_size=1, max_size=4), max_size=3),
    data=st.data(),
)
def test_compaction_equals_analyzing_the_live_rows(base, deltas, data):
    # Chunk ids: base rows are in id order; delta rows get ids anywhere among them.
    ids = [f"c{2 * i:03d}" for i in range(len(base))]
    texts = list(base)
    segments = []
    for i, rows in enumerate(deltas):
        ids += [f"c{2 * j + 1:03d}-{i}" for j in range(len(rows))]
        texts += rows
        segments.append(_raw(rows))
    n = len(texts)
    dead = sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else [])
    rowids = np.arange(100, 100 + n, dtype=np.int64)  # the store's ids: any distinct values
    live = [r for r in range(n) if r not in dead]
    order = sorted(live, key=lambda r: ids[r])
    live_order = rowids[order]
    mapping = new_rows(rowids, np.array(dead, dtype=np.int64), live_order)
    merged = compact(_raw(base), segments, mapping, len(live_order))
    _equal(merged, _raw([texts[r] for r in order]))


def test_new_rows_rejects_segments_that_do_not_match_the_chunks():
    rowids = np.array([5, 6, 7], dtype=np.int64)
    assert new_rows(rowids, None, np.array([7, 5, 6])).tolist() == [1, 2, 0]
    assert new_rows(rowids, np.array([1]), np.array([7, 5])).tolist() == [1, -1, 0]
    with pytest.raises(ValueError, match="do not match"):
        new_rows(rowids, None, np.array([5, 6]))  # a chunk row with no live chunk
    with pytest.raises(ValueError, match="do not match"):
        new_rows(rowids, None, np.array([5, 6, 7, 8]))  # a live chunk in no row


def test_merging_deltas_concatenates_their_rows():
    parts = [["alpha beta", "gamma"], ["beta beta", ""], ["zeta alpha"]]
    merged = merge_deltas([_raw(p) for p in parts])
    _equal(merged, _raw([t for p in parts for t in p]))

"""Dense segments of a stored index: the persisted HNSW graph, delta merges, verify."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from dense_corpus import SPEC, WORDS, assert_same_hits, fresh_build, text, write_corpus

import ctxselect as cs
from ctxselect.config import MAX_DELTA_SEGMENTS
from ctxselect.embed import HashEmbedder
from ctxselect.retrieve import dense as _dense
from ctxselect.retrieve import dense_segments as _dense_segments
from ctxselect.retrieve._ann import HnswIndex
from ctxselect.types import Chunk, ChunkTable, Segments

PAIRS = [f"{a} {b}" for a, b in itertools.combinations(WORDS, 2)]


def _updated(root, ix) -> None:
    """Modify, delete and add files twice, leaving two deltas and dead rows."""
    (root / "f00.txt").write_text(text(100), encoding="utf-8")
    (root / "f01.txt").unlink()
    (root / "n1.txt").write_text(text(101, 60), encoding="utf-8")
    cs.index_paths([], ix, compact_fraction=None)
    (root / "n1.txt").write_text(text(102, 45), encoding="utf-8")  # delta rows die
    (root / "f04.txt").unlink()
    cs.index_paths([], ix, compact_fraction=None)


def test_the_graph_is_stored_searched_beside_deltas_and_rebuilt_on_compaction(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", ann_threshold=1)
    with cs.open_index(ix) as idx:
        assert "ann" in idx.store.snapshot().segments["dense"].base
        assert idx.manifest["embedder"]["ann_threshold"] == 1
    _updated(root, ix)
    exact = fresh_build(root, tmp_path / "fresh")  # default threshold: no graph
    with cs.open_index(ix) as idx, cs.open_index(exact) as want:
        dense = idx.retriever("dense")
        assert dense.ann is not None and dense.ann_rows < len(dense.embedded)
        live = {c.chunk_id for c in idx.store.iter_chunks()}
        n_live = len(live)
        assert dense.ann.size < n_live  # deleted base rows left the graph
        for query, k in itertools.product(PAIRS, (1, 5, 10)):
            got = idx.search(query, k, "dense")
            assert {h.chunk_id for h in got} <= live
            assert_same_hits(got, want.search(query, k, "dense"), (query, k))
        info = cs.compact_index(ix)
        assert info.dropped_rows > 0
        dense = idx.retriever("dense")
        assert dense.ann is not None and dense.ann.size == n_live == dense.ann_rows
        base = idx.store.snapshot().segments["dense"].base
        graph = HnswIndex.load(base["ann"], 256)
        assert sorted(graph.index.get_ids_list()) == list(range(n_live))
        for query in PAIRS:
            assert_same_hits(idx.search(query, 10, "dense"), want.search(query, 10, "dense"))
    assert cs.verify_index(ix).ok


def _table(texts: list[str]) -> ChunkTable:
    return ChunkTable.from_chunks(
        [Chunk(f"d{i:02d}#0", f"d{i:02d}", 0, 0, len(t), t) for i, t in enumerate(texts)]
    )


def test_the_graph_never_returns_deleted_or_blank_rows() -> None:
    embedder = HashEmbedder(64)
    texts = [text(i, 8) if i % 5 else " " for i in range(40)]  # every fifth row is blank
    base_texts, delta_texts = texts[:30], texts[30:]

    def raw(part: list[str]) -> dict[str, np.ndarray]:
        embedded = np.array([t.strip() != "" for t in part])
        vectors = np.zeros((len(part), 64), dtype=np.float32)
        vectors[embedded] = embedder.embed([t for t in part if t.strip()])
        return _dense_segments.raw_vectors(vectors, embedded)

    base = _dense_segments.base_arrays(raw(base_texts), embedder.model_id, ann_threshold=1)
    dead = np.array([1, 2, 5, 12, 31, 33])  # base rows (one blank) and delta rows
    segments = Segments(base=base, deltas=(raw(delta_texts),), dead=dead)
    dense = _dense_segments.load_segments(_table(texts), segments, embedder)
    assert dense.ann is not None and dense.ann.size == 24 - 3  # 24 embedded base rows
    gone = {f"d{i:02d}#0" for i in dead} | {f"d{i:02d}#0" for i in range(0, 40, 5)}
    for query, k in itertools.product(PAIRS[:30], (1, 3, 10, 40)):
        vector = dense.embed_queries([query])[0]
        rows, values = dense.ranked(vector, k)
        hits = dense.search(query, k)
        assert not {h.chunk_id for h in hits} & gone
        scores = np.where(np.isin(np.arange(40), dead), -np.inf, dense.scores(vector))
        want = _dense.candidates(scores, k)
        want = want[np.lexsort((want, -scores[want]))][:k]
        assert set(rows.tolist()) == set(want.tolist())
        assert np.allclose(values, scores[rows], atol=1e-6)


def test_many_deltas_merge_into_one_and_still_equal_a_rebuild(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs", 8)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", ann_threshold=1)
    for i in range(MAX_DELTA_SEGMENTS + 1):
        (root / f"n{i}.txt").write_text(text(400 + i, 15), encoding="utf-8")
        report = cs.index_paths([], ix, compact_fraction=None)
    assert report.delta_segments < MAX_DELTA_SEGMENTS and not report.compacted
    exact = fresh_build(root, tmp_path / "fresh")
    with cs.open_index(ix) as idx, cs.open_index(exact) as want:
        for query in PAIRS:
            assert_same_hits(idx.search(query, 10, "dense"), want.search(query, 10, "dense"))
    assert cs.verify_index(ix).ok


def _delta_blob(ix, name: str) -> tuple[int, np.ndarray]:
    with cs.open_index(ix) as idx:
        seg, dtype, shape, data = idx.store._conn.execute(
            "SELECT seg, dtype, shape, data FROM deltas WHERE name = ?", (name,)
        ).fetchone()
    return seg, np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))


def _set_delta_blob(ix, seg: int, name: str, array: np.ndarray) -> None:
    with cs.open_index(ix) as idx:
        conn = idx.store._conn
        with conn:
            conn.execute(
                "UPDATE deltas SET dtype = ?, shape = ?, data = ? WHERE seg = ? AND name = ?",
                (array.dtype.str, json.dumps(array.shape), array.tobytes(), seg, name),
            )


def test_verify_passes_on_dense_indexes_and_flags_a_damaged_dense_delta(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs", 8)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", ann_threshold=1)
    assert cs.verify_index(ix).ok
    (root / "f00.txt").write_text(text(100), encoding="utf-8")
    (root / "new.txt").write_text(text(101), encoding="utf-8")
    cs.index_paths([], ix, compact_fraction=None)
    assert cs.verify_index(ix).ok  # with a delta and dead rows
    seg, embedded = _delta_blob(ix, "dense/embedded")
    _set_delta_blob(ix, seg, "dense/embedded", np.concatenate([embedded, [1]]).astype(np.uint8))
    report = cs.verify_index(ix)
    assert not report.ok and any("dense delta segment 1" in p for p in report.problems)
    with cs.open_index(ix) as idx, pytest.raises(cs.errors.IndexCorruptError, match="rebuild"):
        idx.search("apple", 3, "dense")
    _set_delta_blob(ix, seg, "dense/embedded", embedded)
    assert cs.verify_index(ix).ok
    _, vectors = _delta_blob(ix, "dense/vectors")  # rows agree with each other, not the delta
    _set_delta_blob(ix, seg, "dense/embedded", embedded[:-1].copy())
    _set_delta_blob(ix, seg, "dense/vectors", vectors[:-1].copy())
    report = cs.verify_index(ix)
    assert not report.ok and any("dense delta segment 1" in p for p in report.problems)
    _set_delta_blob(ix, seg, "dense/embedded", embedded)
    _set_delta_blob(ix, seg, "dense/vectors", vectors)
    cs.compact_index(ix)
    assert cs.verify_index(ix).ok

"""Dense retrieval: exact search equals brute force, blank chunks never embedded, load checks."""

from __future__ import annotations

import numpy as np
import pytest

from _support.five_notes import QUERY, five_notes_table
from ctxselect.embed import HashEmbedder
from ctxselect.errors import ConfigError, IndexMismatchError, NotFoundError
from ctxselect.retrieve import MODES, DenseRetriever, Retriever
from ctxselect.types import Chunk, ChunkTable


class Table:
    """Unit vectors chosen by hand: texts map to rows of ``vectors``."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.name, self.dim, self.model_id = "table", 3, "table-v1"
        self.seen: list[str] = []

    def embed(self, texts, *, query=False):
        self.seen.extend(texts)
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _table(texts: list[str]) -> ChunkTable:
    return ChunkTable.from_chunks(
        [Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t) for i, t in enumerate(texts)]
    )


def test_exact_search_equals_brute_force_with_ties_by_chunk_id() -> None:
    table = five_notes_table()
    dense = DenseRetriever.build(table, HashEmbedder(64))
    assert isinstance(dense, Retriever) and MODES.get("dense").retriever is DenseRetriever
    q = HashEmbedder(64).embed([QUERY])[0]
    v = HashEmbedder(64).embed([table.indexed_text(r) for r in range(len(table))])
    expected = sorted(range(len(table)), key=lambda r: (-float(v[r] @ q), table.chunk_ids[r]))
    hits = dense.search(QUERY, 5)
    assert [h.chunk_id for h in hits] == [table.chunk_ids[r] for r in expected]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert [h.score for h in hits] == pytest.approx([float(v[r] @ q) for r in expected], abs=1e-6)
    assert hits[0].chunk_id == "note2#0"  # the only note with all three words


def test_ties_break_on_chunk_id() -> None:
    same = _unit(1, 0, 0)
    embedder = Table({"b": same, "a": same, "c": _unit(0, 1, 0), "q": same})
    dense = DenseRetriever.build(_table(["b", "a", "c"]), embedder)
    assert [h.chunk_id for h in dense.search("q", 3)] == ["d0#0", "d1#0", "d2#0"]


def test_blank_chunks_are_never_embedded_nor_returned() -> None:
    embedder = Table({"alpha": _unit(1, 0, 0), "beta": _unit(0, 1, 0), "q": _unit(1, 1, 0)})
    dense = DenseRetriever.build(_table(["alpha", "   ", "beta", ""]), embedder)
    assert sorted(embedder.seen) == ["alpha", "beta", "q"][:2]
    hits = dense.search("q", 10)
    assert [h.chunk_id for h in hits] == ["d0#0", "d2#0"]
    assert "never embedded" in dense.explain("q", "d1#0").note
    assert dense.search("  ", 5) == []


def test_negative_cosines_still_rank() -> None:
    embedder = Table({"x": _unit(1, 0, 0), "y": _unit(-1, 0.1, 0), "q": _unit(1, 0, 0)})
    hits = DenseRetriever.build(_table(["x", "y"]), embedder).search("q", 5)
    assert [h.chunk_id for h in hits] == ["d0#0", "d1#0"] and hits[1].score < 0


def test_arrays_round_trip_and_embedder_mismatch() -> None:
    table = five_notes_table()
    dense = DenseRetriever.build(table, HashEmbedder(64))
    loaded = DenseRetriever.load(table, dense.arrays(), HashEmbedder(64))
    assert loaded.search(QUERY, 5) == dense.search(QUERY, 5)
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(table, dense.arrays(), HashEmbedder(128))
    assert "hash-v1-64" in str(err.value) and "hash-v1-128" in str(err.value)
    assert "ctxselect index" in str(err.value)
    with pytest.raises(IndexMismatchError, match="covers 5 chunks"):
        DenseRetriever.load(_table(["one"]), dense.arrays(), HashEmbedder(64))


def test_precomputed_vectors_are_used_as_given() -> None:
    table = five_notes_table()
    vectors = HashEmbedder(64).embed([table.indexed_text(r) for r in range(len(table))])
    dense = DenseRetriever.build(table, HashEmbedder(64), vectors)
    assert np.array_equal(dense.vectors, vectors)
    with pytest.raises(ConfigError, match="shape"):
        DenseRetriever.build(table, HashEmbedder(64), vectors[:3])


def test_ann_candidates_rescored_exactly() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"t{i}" for i in range(400)]
    queries = {
        f"q{i}": vectors[i] + 0.1 * rng.standard_normal(16).astype(np.float32) for i in range(20)
    }
    embedder = Table({**dict(zip(texts, vectors, strict=True)), **queries})
    embedder.dim = 16
    table = _table(texts)
    exact = DenseRetriever.build(table, embedder, vectors)
    ann = DenseRetriever.build(table, embedder, vectors, ann_threshold=100)
    assert exact.ann is None and ann.ann is not None
    want = exact.search_many({q: q for q in queries}, 10)
    loaded = DenseRetriever.load(table, ann.arrays(), embedder)
    assert loaded.ann is not None
    for retriever in (ann, loaded):
        got = retriever.search_many({q: q for q in queries}, 10)
        for qid in queries:  # small graph, ef 128: every true neighbour found
            assert [h.chunk_id for h in got[qid]] == [h.chunk_id for h in want[qid]]
            assert [h.score for h in got[qid]] == pytest.approx([h.score for h in want[qid]])


def test_errors_name_the_fix() -> None:
    dense = DenseRetriever.build(five_notes_table(), HashEmbedder(64))
    with pytest.raises(ConfigError, match="k"):
        dense.search(QUERY, 0)
    with pytest.raises(NotFoundError, match="use a chunk_id returned by search"):
        dense.explain(QUERY, "nope#0")
    assert dense.explain(QUERY, "note2#0").score == pytest.approx(dense.search(QUERY, 1)[0].score)
    assert dense.vectors_of(["note1#0"]).shape == (1, 64)

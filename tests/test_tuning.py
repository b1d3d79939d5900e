"""Fusion tuning: picks the right spec on a synthetic case; its CV figure is out-of-sample."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.config import FuseSpec
from ctxselect.errors import ConfigError, InputError
from ctxselect.tuning import default_grid, fold_of, per_query_scores, tune, tune_fusion
from ctxselect.types import Chunk, ChunkTable

N = 20


class Lookup:
    """An embedder whose vectors are chosen by hand, by text."""

    name, model_id = "lookup", "lookup-v1"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.dim = len(next(iter(vectors.values())))

    def embed(self, texts, *, query=False):
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def _case(dense_wins: set[int]):
    """Query i has one relevant document; dense or keyword finds it, the other a decoy."""
    eye = np.eye(2 * N, dtype=np.float32)
    chunks, vectors, queries, qrels = [], {}, {}, {}
    for i in range(N):
        queries[f"q{i}"] = f"w{i}x"
        vectors[f"w{i}x"] = eye[i]
        qrels[f"q{i}"] = {f"rel{i}": 1}
        if i in dense_wins:
            rel, decoy = f"plain{i}y", f"w{i}x decoy"  # only the decoy shares the query word
            vectors[rel], vectors[decoy] = eye[i], eye[N + i]
        else:
            rel, decoy = f"w{i}x relevant", f"decoy{i}z"
            vectors[rel], vectors[decoy] = eye[N + i], eye[i]
        for doc_id, text in ((f"rel{i}", rel), (f"dec{i}", decoy)):
            chunks.append(Chunk(f"{doc_id}#0", doc_id, 0, 0, len(text), text))
    return ChunkTable.from_chunks(chunks), Lookup(vectors), queries, qrels


GRID = [FuseSpec("convex", weight=0.0), FuseSpec("convex", weight=1.0)]


def test_picks_dense_when_dense_finds_every_answer() -> None:
    table, embedder, queries, qrels = _case(set(range(N)))
    hybrid, report = tune(table, embedder, queries, qrels, grid=GRID, folds=4)
    assert report.spec == FuseSpec("convex", weight=1.0) and hybrid.spec == report.spec
    assert report.cv == pytest.approx(1.0) and report.in_sample == pytest.approx(1.0)
    assert report.baselines["dense"] == pytest.approx(1.0)
    assert report.baselines["keyword"] == pytest.approx(0.0)
    assert report.n_queries == N and report.grid_size == 2 and len(report.folds) == 4
    assert all(f.spec == report.spec and f.n_test == 5 for f in report.folds)
    assert hybrid.search("w3x", 1)[0].doc_id == "rel3"


def test_cv_scores_each_query_with_the_spec_tuned_on_other_folds() -> None:
    table, embedder, queries, qrels = _case(set(range(0, N, 3)))
    hybrid, report = tune(table, embedder, queries, qrels, grid=GRID, folds=5, seed=3)
    pools = hybrid.pools(queries, GRID[0].depth)
    per_spec = [per_query_scores(hybrid, pools, qrels, spec) for spec in GRID]
    folds = fold_of(list(queries), 5, 3)
    expected = []
    for f in range(5):
        train = [q for q in queries if folds[q] != f]
        means = [np.mean([s[q] for q in train]) for s in per_spec]
        best = int(np.argmax(means))
        assert report.folds[f].spec == GRID[best]
        expected += [per_spec[best][q] for q in queries if folds[q] == f]
    assert report.cv == pytest.approx(float(np.mean(expected)))
    assert report.spec == FuseSpec("convex", weight=0.0)  # keyword wins 13 of 20 queries
    assert report.in_sample >= report.cv


def test_fold_assignment_is_balanced_and_seeded() -> None:
    qids = [f"q{i}" for i in range(23)]
    folds = fold_of(qids, 5, 0)
    sizes = sorted(np.bincount(list(folds.values())).tolist())
    assert sizes == [4, 4, 5, 5, 5]
    assert fold_of(list(reversed(qids)), 5, 0) == folds != fold_of(qids, 5, 1)


def test_default_grid_starts_with_plain_rrf_and_covers_both_methods() -> None:
    grid = default_grid()
    assert grid[0] == FuseSpec()
    assert {(s.method, s.norm) for s in grid if s.method == "convex"} == {
        ("convex", "minmax"),
        ("convex", "zscore"),
    }
    assert len(set(grid)) == len(grid)


def test_bad_input() -> None:
    table, embedder, queries, qrels = _case(set())
    hybrid, _ = tune(table, embedder, queries, qrels, grid=GRID, folds=2)
    with pytest.raises(ConfigError, match="folds"):
        tune_fusion(hybrid, queries, qrels, grid=GRID, folds=1)
    with pytest.raises(ConfigError, match="grid is empty"):
        tune_fusion(hybrid, queries, qrels, grid=[])
    with pytest.raises(InputError, match="same query ids"):
        tune_fusion(hybrid, {"other": "w1x"}, qrels, grid=GRID)

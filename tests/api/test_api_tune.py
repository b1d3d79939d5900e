"""Fusion tuning: picks the right spec on a synthetic case; its CV figure is out-of-sample.

The one-SE rule is checked on synthetic per-query score tables: noise keeps plain RRF, a
clear winner is picked, fusion that does not help falls back to a side alone, and the
out-of-sample figure applies the rule inside each fold.
"""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.api import tune as tuning
from ctxselect.api.tune import (
    complexity,
    default_grid,
    fold_of,
    per_query_scores,
    tune,
    tune_fusion,
)
from ctxselect.config import FuseSpec
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.one_se import one_se_choice, paired_se
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
    assert report.mode == "dense"  # dense alone is as good as any fusion: no need to fuse
    assert report.cv == pytest.approx(1.0) and report.in_sample == pytest.approx(1.0)
    assert report.baselines["dense"] == pytest.approx(1.0)
    assert report.baselines["keyword"] == pytest.approx(0.0)
    assert report.n_queries == N and report.grid_size == 2 and len(report.folds) == 4
    assert all(f.spec == report.spec and f.n_test == 5 for f in report.folds)
    assert hybrid.search("w3x", 1)[0].doc_id == "rel3"


def test_cv_scores_each_query_with_the_choice_made_on_other_folds() -> None:
    table, embedder, queries, qrels = _case(set(range(0, N, 3)))
    hybrid, report = tune(table, embedder, queries, qrels, grid=GRID, folds=5, seed=3)
    pools = hybrid.pools(queries, GRID[0].depth)
    per_spec = [per_query_scores(hybrid, pools, qrels, spec) for spec in GRID]
    qids = list(queries)
    scores = np.array([[s[q] for q in qids] for s in per_spec])
    folds = np.array([fold_of(qids, 5, 3)[q] for q in qids])
    expected = np.zeros(len(qids))
    for f in range(5):
        train = folds != f
        best = one_se_choice(scores[:, train])
        assert report.folds[f].spec == GRID[best]
        expected[~train] = scores[best, ~train]
    assert report.cv == pytest.approx(float(expected.mean()))
    assert report.spec == FuseSpec("convex", weight=0.0)  # keyword wins 13 of 20 queries
    assert report.mode == "hybrid"  # the grid's first spec is tried first; it ties keyword
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
    assert grid == sorted(grid, key=complexity)  # simplest first: the one-SE rule's order
    assert grid.index(FuseSpec("rrf", 40.0, weight=0.5)) < grid.index(FuseSpec("rrf", weight=0.4))
    assert max(i for i, s in enumerate(grid) if s.method == "rrf") < grid.index(
        FuseSpec("convex", weight=0.5)
    )
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


# --- the one-SE rule on synthetic per-query score tables ---------------------------------

DEFAULT = default_grid()
Q = 40


def _noise_grid(rng: np.random.Generator, base: np.ndarray, own: float = 0.005) -> np.ndarray:
    """Plain RRF scores ``base``; the other settings are noisy moves away from it.

    As in a real grid, settings move together: each query has one random shift that
    moving away from RRF brings, each setting goes part of the way (a signed share), plus
    a little noise of its own. Nothing is better than RRF in expectation.
    """
    shift = rng.normal(0.0, 0.1, len(base))
    reach = rng.uniform(-1.0, 1.0, (len(DEFAULT), 1))
    rows = base + reach * shift + rng.normal(0.0, own, (len(DEFAULT), len(base)))
    rows = np.clip(rows, 0.0, 1.0)
    rows[0] = base
    return rows


def _tune_table(monkeypatch, grid_rows: np.ndarray, keyword: np.ndarray, dense: np.ndarray):
    """tune_fusion on a score table given per query: the grid's rows, then each side alone."""
    qids = [f"q{i}" for i in range(grid_rows.shape[1])]

    def rows(values):
        return dict(zip(qids, values.tolist(), strict=True))

    monkeypatch.setattr(tuning, "_grid_scores", lambda *_: [rows(r) for r in grid_rows])
    monkeypatch.setattr(
        tuning, "_single_scores", lambda *_: {"keyword": rows(keyword), "dense": rows(dense)}
    )
    monkeypatch.setattr(tuning, "_baselines", lambda *_: {})

    class Pools:  # the scores above stand for what these pools would fuse to
        table = None

        def pools(self, queries, depth):
            return dict.fromkeys(queries)

    queries, qrels = {q: q for q in qids}, {q: {"d": 1} for q in qids}
    grid = DEFAULT[: len(grid_rows)]
    return tune_fusion(Pools(), queries, qrels, grid=grid, folds=5, seed=0)  # type: ignore[arg-type]


def test_a_noisy_grid_keeps_plain_rrf_where_argmax_chases_noise() -> None:
    kept = argmax_kept = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        table = _noise_grid(rng, rng.uniform(0.0, 1.0, Q))
        kept += one_se_choice(table) == 0
        argmax_kept += int(np.argmax(table.mean(axis=1))) == 0
    assert argmax_kept == 0  # with 71 noisy settings the best in-sample one is always noise
    assert kept >= 0.5 * 60  # the rule keeps RRF unless the noise leads by over one SE


def test_tuning_on_a_noisy_grid_keeps_plain_rrf(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(0.0, 1.0, Q)
    grid_rows = _noise_grid(rng, base)
    assert int(np.argmax(grid_rows.mean(axis=1))) != 0
    report = _tune_table(monkeypatch, grid_rows, base - 0.2, base - 0.3)
    assert report.spec == FuseSpec() and report.mode == "hybrid"
    assert report.in_sample == pytest.approx(base.mean())


def test_a_clear_winner_is_picked(monkeypatch) -> None:
    rng = np.random.default_rng(2)
    base = rng.uniform(0.0, 0.8, Q)
    grid_rows = _noise_grid(rng, base, own=0.05)
    grid_rows[40] = base + 0.15 + rng.normal(0.0, 0.05, Q)
    report = _tune_table(monkeypatch, grid_rows, base - 0.2, base - 0.3)
    assert report.spec == DEFAULT[40] and report.mode == "hybrid"
    assert all(f.spec == DEFAULT[40] and f.mode == "hybrid" for f in report.folds)


def test_fusion_that_does_not_help_falls_back_to_the_better_side(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    keyword = rng.uniform(0.2, 1.0, Q)
    grid_rows = np.clip(keyword - 0.08 + rng.normal(0.0, 0.03, (len(DEFAULT), Q)), 0.0, 1.0)
    report = _tune_table(monkeypatch, grid_rows, keyword, keyword - 0.3)
    assert report.mode == "keyword" and report.in_sample == pytest.approx(keyword.mean())
    assert all(f.mode == "keyword" for f in report.folds)
    assert report.cv == pytest.approx(keyword.mean())
    report = _tune_table(monkeypatch, grid_rows, keyword - 0.3, keyword)  # the other side
    assert report.mode == "dense"


def test_the_out_of_sample_figure_applies_the_rule_inside_each_fold(monkeypatch) -> None:
    base = np.random.default_rng(4).uniform(0.0, 0.5, Q)
    qids = [f"q{i}" for i in range(Q)]
    held = np.array([fold_of(qids, 5, 0)[q] == 0 for q in qids])
    grid_rows = np.tile(base, (6, 1))
    grid_rows[5, held] += 0.5  # setting 5 helps only the queries of fold 0
    report = _tune_table(monkeypatch, grid_rows, base - 0.2, base - 0.3)
    # On all queries setting 5 leads clearly, so it is chosen, and in sample it looks good:
    assert report.spec == DEFAULT[5] and report.in_sample == pytest.approx(base.mean() + 0.1)
    # but chosen without fold 0 it has nothing to show, so fold 0 is ranked by plain RRF,
    # and the other folds, ranked by setting 5, gain nothing: no gain out of sample.
    assert report.folds[0].spec == DEFAULT[0]
    assert all(f.spec == DEFAULT[5] for f in report.folds[1:])
    assert report.cv == pytest.approx(base.mean())
    tests = [f.test for f in report.folds]
    assert report.fold_std == pytest.approx(float(np.std(tests, ddof=1))) and report.fold_std > 0


def test_the_rule_rejects_a_bad_table() -> None:
    with pytest.raises(ConfigError, match="candidates, queries"):
        one_se_choice(np.zeros((0, 3)))
    with pytest.raises(ConfigError, match="order must list rows"):
        one_se_choice(np.zeros((2, 3)), [2])


def test_tuning_shows_its_progress_only_when_asked(monkeypatch) -> None:
    """Scoring the specs is the slow part of `ctxselect tune` (14 s on NFCorpus): a bar
    counts them on stderr when asked (the CLI asks when stderr is a terminal)."""
    import io

    from ctxselect.api.tune import tune_fusion

    table, embedder, queries, qrels = _case(set(range(0, N, 2)))
    hybrid, _ = tune(table, embedder, queries, qrels, grid=GRID, folds=4)
    for progress, shown in ((False, ""), (True, "tuning fusion")):
        err = io.StringIO()
        monkeypatch.setattr("sys.stderr", err)
        quiet = tune_fusion(hybrid, queries, qrels, grid=GRID, folds=4, progress=progress)
        assert (shown in err.getvalue()) if shown else err.getvalue() == ""
        assert quiet.spec in GRID
    assert f"{len(GRID)}/{len(GRID)}" in err.getvalue()


def test_the_rule_never_picks_a_row_over_a_simpler_one_with_a_higher_mean() -> None:
    # Seen on SciFact: keyword alone lagged the best by 0.0045 with a small paired SE, so
    # it was not within one SE; a noisy fusion lagged by 0.0063 with a large SE, so it
    # was, and tune made that fusion the default mode although bm25 scored higher.
    best = np.full(4, 0.6)
    steady = best - 0.01  # lags 0.01 on every query: paired SE 0
    noisy = best - np.array([-0.3, 0.3, -0.3, 0.36])  # lags 0.015 on average, SE ~0.17
    table = np.vstack([steady, noisy, best])
    lag = table[2].mean() - table.mean(axis=1)
    se = paired_se(table, 2)
    assert lag[0] > se[0] and lag[1] <= se[1] and lag[0] < lag[1]  # the case as described
    assert one_se_choice(table) == 0  # was 1
    assert one_se_choice(table, [1, 0, 2]) == 1  # given first, the noisy row stays the pick

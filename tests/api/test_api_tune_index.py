"""tune_index on a stored index: the chosen fusion lands in the manifest and is used."""

from __future__ import annotations

import dataclasses
import json

import pytest

import ctxselect as cs
from ctxselect.api import tune as tuning_module
from ctxselect.api.tune import TuningReport, tune_index
from ctxselect.config import FuseSpec
from ctxselect.errors import IndexMismatchError
from ctxselect.retrieve.hybrid import HybridRetriever

GRID = [FuseSpec("convex", weight=0.2), FuseSpec("rrf", 20.0, weight=0.7)]  # not the default
FILLER = ["common", "shared", "words", "appear", "everywhere", "in", "this", "corpus"]
N = 12


@pytest.fixture
def labeled(tmp_path):
    """A corpus where query i names the two rare words of file i; BEIR queries and qrels."""
    root = tmp_path / "docs"
    root.mkdir()
    queries, qrels = [], ["query-id\tcorpus-id\tscore"]
    for i in range(N):
        words = [f"rare{i}a", *FILLER[: 3 + i % 5], f"rare{i}b", *FILLER[i % 4 :]]
        (root / f"f{i:02d}.txt").write_text(" ".join(words), encoding="utf-8")
        queries.append(json.dumps({"_id": f"q{i}", "text": f"rare{i}a rare{i}b common"}))
        qrels.append(f"q{i}\tf{i:02d}.txt\t1")
    (tmp_path / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, embedder="hash")
    return ix, tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"


def _tune(ix, queries, qrels, **options) -> TuningReport:
    return tune_index(ix, queries, qrels, grid=GRID, folds=3, **options)


def test_tuning_records_the_fusion_and_every_reader_uses_it(labeled) -> None:
    ix, queries, qrels = labeled
    with cs.open_index(ix) as before:
        generation = before.info().generation
        assert before.fusion == FuseSpec() and before.retriever("hybrid").spec == FuseSpec()
        report = _tune(ix, queries, qrels)
        assert report.spec in GRID and report.n_queries == N and report.grid_size == 2
        assert report.index == str(ix) and len(report.folds) == 3
        assert set(report.baselines) == {"keyword", "dense", "rrf"}
        before.search("rare1a", 3)  # any call reloads the newer generation
        assert before.info().generation == generation + 2  # fusion, then calibration
        assert before.fusion == report.spec
        assert before.retriever("hybrid").spec == report.spec
    with cs.open_index(ix) as idx:
        assert idx.manifest["fusion"] == dataclasses.asdict(report.spec)
        hybrid = idx.retriever("hybrid")
        assert isinstance(hybrid, HybridRetriever) and hybrid.spec == report.spec
        tuning = idx.info().settings["tuning"]
        assert tuning["metric"] == "ndcg@10" and tuning["n_queries"] == N
        assert tuning["cv"] == pytest.approx(report.cv, abs=1e-6)
        assert tuning["folds"] == 3 and tuning["grid_size"] == 2
        assert tuning["queries"] == str(queries) and tuning["qrels"] == str(qrels)
        assert tuning["mode"] == report.mode and tuning["fold_std"] == pytest.approx(
            report.fold_std, abs=1e-6
        )
        assert idx.manifest["default_mode"] == report.default_mode
        assert report.default_mode == {"keyword": "bm25"}.get(report.mode, report.mode)
    assert cs.verify_index(ix).ok


def test_an_index_opened_before_tuning_sees_the_new_fusion_at_once(labeled) -> None:
    ix, queries, qrels = labeled
    with cs.open_index(ix) as before:
        before.search("rare1a", 3, "hybrid")
        report = _tune(ix, queries, qrels)
        assert before.fusion == report.spec  # no search in between


def test_write_false_reports_without_writing(labeled) -> None:
    ix, queries, qrels = labeled
    with cs.open_index(ix) as idx:
        manifest = idx.store.read_manifest()
    report = _tune(ix, queries, qrels, write=False)
    assert report.spec in GRID and report.index == str(ix)
    with cs.open_index(ix) as idx:
        assert idx.store.read_manifest() == manifest


def test_tuning_needs_dense_vectors(tmp_path, labeled) -> None:
    _, queries, qrels = labeled
    plain = tmp_path / "plain"
    cs.index_paths([tmp_path / "docs"], plain)
    with pytest.raises(IndexMismatchError, match="--embedder"):
        _tune(plain, queries, qrels)


@pytest.mark.parametrize(("side", "mode"), [("keyword", "bm25"), ("dense", "dense")])
def test_a_side_alone_chosen_becomes_the_default_mode(labeled, monkeypatch, side, mode) -> None:
    ix, queries, qrels = labeled
    row = tuning_module.SINGLES.index(side)
    monkeypatch.setattr(tuning_module, "_choose", lambda table, n_grid: (1, n_grid + row))
    report = _tune(ix, queries, qrels)
    assert report.mode == side and report.spec == GRID[1] and report.default_mode == mode
    assert all(f.mode == side for f in report.folds)
    with cs.open_index(ix) as idx:
        assert idx.manifest["default_mode"] == mode
        assert idx.manifest["fusion"] == dataclasses.asdict(GRID[1])  # hybrid still tuned
        assert idx.info().settings["tuning"]["mode"] == side

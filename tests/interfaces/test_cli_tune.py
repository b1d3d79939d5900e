"""``ctxselect tune``: the fusion it stores, what info shows, dry runs and bad inputs."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails, run

from _support.sessions_corpus import write_corpus
from ctxselect import api
from ctxselect.config import FuseSpec
from ctxselect.interfaces.cli import commands, tune  # noqa: F401  (register commands)

QUERIES = {
    "q1": ("install the agent on linux with apt", "install.md"),
    "q2": ("how big should the cache be", "cache.md"),
    "q3": ("exponential backoff delays", "retry.md"),
    "q4": ("homebrew launch agent at login", "install.md"),
    "q5": ("eviction of least recently used entries", "cache.md"),
    "q6": ("random jitter between retries", "retry.md"),
    "q7": ("proxy variable for downloads", "install.md"),
    "q8": ("idempotency key for POST requests", "retry.md"),
    "q9": ("snapshot written at shutdown", "cache.md"),
    "q10": ("service control manager at boot", "install.md"),
}


@pytest.fixture
def labeled(tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, (_, d) in QUERIES.items())
    )
    return str(queries), str(qrels)


def _index(tmp_path, name: str, *extra: str) -> str:
    corpus = write_corpus(tmp_path / f"{name}-corpus")
    folder = str(tmp_path / name)
    run("index", str(corpus), "--index", folder, "--chunker", "markdown", "--size", "80",
        *extra)  # fmt: skip
    return folder


@pytest.fixture
def dense_index(tmp_path):
    return _index(tmp_path, "ix", "--embedder", "hash")


def _tune(folder, labeled, *extra: str):
    queries, qrels = labeled
    return ["tune", "--queries", queries, "--qrels", qrels, "--index", folder, *extra]


def test_tune_writes_fusion_and_tuning_and_info_shows_them(dense_index, labeled):
    report = json.loads(run(*_tune(dense_index, labeled, "--folds", "3", "--json")).stdout)
    assert report["n_queries"] == len(QUERIES) and len(report["folds"]) == 3
    assert sum(f["n_test"] for f in report["folds"]) == len(QUERIES)
    assert set(report["baselines"]) == {"keyword", "dense", "rrf"}
    assert 0.0 <= report["cv"] <= 1.0 and report["grid_size"] > 1
    assert report["mode"] in ("hybrid", "keyword", "dense")  # the one-SE rule's choice
    assert report["default_mode"] == {"keyword": "bm25"}.get(report["mode"], report["mode"])
    info = json.loads(run("info", "--index", dense_index, "--json").stdout)
    settings = info["settings"]
    assert settings["fusion"] == report["spec"]
    assert settings["default_mode"] == report["default_mode"]
    tuning = settings["tuning"]
    assert tuning["metric"] == "ndcg@10" and tuning["n_queries"] == len(QUERIES)
    assert tuning["cv"] == pytest.approx(report["cv"], abs=1e-6) and tuning["folds"] == 3
    with api.open_index(dense_index) as idx:
        assert idx.fusion == FuseSpec(**report["spec"])
    text = run("info", "--index", dense_index).stdout
    label = FuseSpec(**report["spec"]).label()
    assert f"fusion = {label} (tuned)" in text
    assert f"tuning = ndcg@10 {report['cv']:.4f} out of sample vs keyword" in text
    assert f"on {len(QUERIES)} queries (3 folds)" in text


def test_tune_text_output(dense_index, labeled):
    text = run(*_tune(dense_index, labeled, "--seed", "3")).stdout
    report = json.loads(run(*_tune(dense_index, labeled, "--seed", "3", "--json")).stdout)
    label = FuseSpec(**report["spec"]).label()
    assert f"tuned hybrid fusion on {len(QUERIES)} labeled queries" in text
    assert f"{report['grid_size']} settings, 5-fold cross-validation (seed 3)" in text
    assert f"chosen:        {label}" in text
    assert f"cv ndcg@10:    {report['cv']:.4f} out of sample" in text
    assert f"± {report['fold_std']:.4f} fold to fold" in text
    assert f"keyword {report['baselines']['keyword']:.4f}" in text
    assert "fold  spec" in text and text.count("\n   ") >= 5  # one row per fold
    assert f"default mode:  {report['default_mode']}" in text
    assert "written to the index" in text


def test_dry_run_writes_nothing(dense_index, labeled):
    before = json.loads(run("info", "--index", dense_index, "--json").stdout)
    text = run(*_tune(dense_index, labeled, "--dry-run")).stdout
    assert "dry run: nothing was written to the index" in text
    after = json.loads(run("info", "--index", dense_index, "--json").stdout)
    assert after["generation"] == before["generation"]
    assert after["settings"] == before["settings"]
    assert after["settings"]["tuning"] is None and after["settings"]["fusion"] is None


def test_tune_without_dense_vectors_calibrates_the_keyword_modes(tmp_path, labeled):
    folder = _index(tmp_path, "kw")
    text = run(*_tune(folder, labeled)).stdout
    assert "has no dense vectors" in text and f"--index {folder} --embedder minilm" in text
    assert "calibrated P(relevant)" in text
    with api.open_index(folder) as idx:
        assert idx.calibration("bm25") is not None and idx.fusion == FuseSpec()


def test_tune_with_queries_matching_no_label(dense_index, labeled, tmp_path):
    queries = tmp_path / "other.jsonl"
    queries.write_text('{"_id": "zz1", "text": "cache"}\n{"_id": "zz2", "text": "retry"}\n')
    message = fails("tune", "--queries", str(queries), "--qrels", labeled[1], "--index",
                    dense_index)  # fmt: skip
    assert "no query" in message and "query ids" in message


def test_tune_with_too_many_folds(dense_index, labeled):
    message = fails(*_tune(dense_index, labeled, "--folds", "50"))
    assert f"folds must be a whole number from 2 to the {len(QUERIES)} labeled queries" in message

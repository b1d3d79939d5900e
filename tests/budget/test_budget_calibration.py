"""Calibrated P(relevant): the model, calibrate_index, and what search/select show."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import ctxselect as cs
from ctxselect.api.calibrate import GRID, calibrate_index
from ctxselect.budget import calibration as cal
from ctxselect.errors import ConfigError, InputError
from ctxselect.interfaces.cli import commands, tune  # noqa: F401  (register commands)
from ctxselect.interfaces.cli.main import cli

FILLER = ["common", "shared", "words", "appear", "everywhere", "in", "this", "corpus"]


def _corpus(tmp_path, n, embedder=None):
    """n files; query i names file i's two rare words (BEIR queries and qrels)."""
    root = tmp_path / "docs"
    root.mkdir()
    queries, qrels = [], ["query-id\tcorpus-id\tscore"]
    for i in range(n):
        # letters only: the tfidf analyzer keeps runs of 3+ ASCII letters ("rarebx" -> "rare")
        code = "".join(chr(ord("a") + int(d)) for d in str(i))
        one, two = f"rare{code}x", f"rare{code}y"
        words = [one, *FILLER[: 3 + i % 5], two, *FILLER[i % 4 :]]
        (root / f"f{i:02d}.txt").write_text(" ".join(words), encoding="utf-8")
        queries.append(json.dumps({"_id": f"q{i}", "text": f"{one} {two} common"}))
        qrels.append(f"q{i}\tf{i:02d}.txt\t1")
    (tmp_path / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, embedder=embedder)
    return ix, tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"


def test_fit_recovers_a_known_logistic_curve():
    rng = np.random.default_rng(0)
    rankings = []
    for _ in range(300):
        scores = np.sort(rng.uniform(0, 10, 20))[::-1]
        truth = 1 / (1 + np.exp(-(scores - 7.0)))
        rankings.append((scores.tolist(), (rng.uniform(size=20) < truth).astype(int).tolist()))
    model = cal.fit(rankings)
    grid = np.linspace(10, 0, 11).tolist()
    p = np.array(model.predict(grid))
    assert np.max(np.abs(p - 1 / (1 + np.exp(-(np.array(grid) - 7.0))))) < 0.12
    fold = {str(i): i % 5 for i in range(300)}
    reliability = cal.cross_validate({str(i): r for i, r in enumerate(rankings)}, fold)
    assert reliability.ece < 0.03


def test_ece_is_the_weighted_gap_per_bin():
    p = np.array([0.05, 0.05, 0.95, 0.95])
    y = np.array([0.0, 1.0, 1.0, 1.0])
    # bin 0: mean P 0.05 vs 0.5 relevant (weight 1/2); bin 9: 0.95 vs 1.0 (weight 1/2)
    assert cal.expected_calibration_error(p, y) == pytest.approx(0.5 * 0.45 + 0.5 * 0.05)


def test_cost_threshold_follows_the_formula():
    assert cal.cost_threshold(200, 10, 0.1, 2000) == pytest.approx(200 * 1.9 / 2000)
    assert cal.cost_threshold(5000, 10, 1.0, 2000) == 1.0


def test_calibrate_index_stores_p_that_search_and_select_show(tmp_path):
    ix, queries, qrels = _corpus(tmp_path, 12)
    report = calibrate_index(ix, queries, qrels, folds=3)
    assert [c.mode for c in report.calibrations] == ["bm25", "tfidf", "tfidf-sum"]
    assert report.skipped == {}  # keyword-only index: nothing to skip
    assert all(0 <= c.ece <= 1 and c.n_queries == 12 for c in report.calibrations)
    first = report.calibrations[0]
    assert first.cost_threshold == round(cal.cost_threshold(first.chunk_tokens, 10, 0.1), 6)
    assert first.threshold in (first.cost_threshold, *GRID)  # the labels may move it
    assert first.threshold_rule.startswith(("cost model", "labels"))
    with cs.open_index(ix) as idx:
        hits = idx.search("raredx raredy common", 5)
        assert hits[0].doc_id == "f03.txt"
        assert all(h.p_relevant is not None for h in hits)
        assert hits[0].p_relevant > hits[-1].p_relevant
        chosen = idx.select("raredx raredy common", 4000, stop="auto")
        filled = idx.select("raredx raredy common", 4000, stop="none")
        assert chosen.threshold == report.calibrations[0].threshold
        assert chosen.chunks[0].p_relevant is not None
        assert len(chosen.chunks) < len(filled.chunks)
        assert chosen.stop.startswith("next chunk below threshold: P ")
        assert "calibrated" in idx.info().settings["stop_auto"]["bm25"]
        # P reads the top STATS_DEPTH scores, so it does not depend on how many are asked for
        assert [h.p_relevant for h in idx.search("raredx raredy common", 1)] == [hits[0].p_relevant]


def test_features_do_not_depend_on_ranks_past_the_stats_depth():
    scores = np.linspace(30.0, 1.0, 3 * cal.STATS_DEPTH)
    deep = cal.rank_features(scores)
    head = cal.rank_features(scores[: cal.STATS_DEPTH])
    assert np.allclose(deep[: cal.STATS_DEPTH], head)
    assert cal.rank_features([2.0, 1.0]).shape == (2, len(cal.FEATURES))
    # a query whose best score stands out gets a higher z_top than one with a flat head
    flat = cal.rank_features([5.0] * 3 + [4.9] * 20)[0, cal.FEATURES.index("z_top")]
    outlier = cal.rank_features([9.0] + [5.0] * 22)[0, cal.FEATURES.index("z_top")]
    assert outlier > flat
    # scores at or below zero (cosine, fused) stay finite
    assert np.isfinite(cal.rank_features([0.4, 0.0, -0.2] + [-0.3] * 10)).all()


def test_select_stop_on_an_uncalibrated_index(tmp_path):
    ix, _q, _r = _corpus(tmp_path, 6)
    with cs.open_index(ix) as idx:
        assert idx.search("rarebx rareby", 3)[0].p_relevant is None
        auto = idx.select("rarebx rareby common", 4000)
        assert "uncalibrated" in auto.stop
        assert "uncalibrated" in idx.info().settings["stop_auto"]["bm25"]
        with pytest.raises(ConfigError, match="ctxselect tune"):
            idx.select("rarebx rareby common", 4000, stop=0.5)
        with pytest.raises(ConfigError, match="auto, none"):
            idx.select("rarebx rareby common", 4000, stop="maybe")


def test_fewer_than_ten_labeled_queries_are_refused_with_the_count(tmp_path):
    ix, queries, qrels = _corpus(tmp_path, 7)
    with pytest.raises(InputError, match="found 7"):
        calibrate_index(ix, queries, qrels, folds=3)


def test_cli_tune_calibrates_an_index_without_dense_vectors(tmp_path):
    ix, queries, qrels = _corpus(tmp_path, 12)
    args = ["tune", "--queries", str(queries), "--qrels", str(qrels), "--index", str(ix)]
    out = CliRunner().invoke(cli, [*args, "--folds", "3", "--turns", "4", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["fusion"] is None
    first = data["calibration"]["calibrations"][0]
    assert first["mode"] == "bm25" and first["turns"] == 4
    shown = CliRunner().invoke(cli, ["select", "rarecx rarecy", "--index", str(ix), "--json"])
    selection = json.loads(shown.stdout)
    assert selection["stop"] and selection["chunks"][0]["p_relevant"] is not None
    text = CliRunner().invoke(cli, ["select", "rarecx rarecy", "--index", str(ix)])
    assert f"; stopped: {selection['stop']}" in text.stderr
    hits = CliRunner().invoke(cli, ["search", "rarecx rarecy", "--index", str(ix), "-k", "2"])
    assert re.search(r"  P [01]\.\d\d  ", hits.stdout)
    explained = CliRunner().invoke(cli, ["explain", "rarecx rarecy", "--index", str(ix), "-k", "1"])
    assert re.search(r"P\(relevant\) [01]\.\d{3}", explained.stdout)
    bad = CliRunner().invoke(cli, ["select", "x", "--index", str(ix), "--stop", "2"])
    assert bad.exit_code == 2 and "outside [0, 1]" in bad.output


@pytest.mark.slow
def test_bm25_calibration_on_scifact_is_reliable_out_of_sample(scifact_dir, tmp_path):
    ix = tmp_path / "sf"
    cs.index_paths([scifact_dir / "corpus.jsonl"], ix)
    report = calibrate_index(ix, scifact_dir / "queries.jsonl", scifact_dir / "qrels" / "test.tsv")
    bm25 = report.calibrations[0]
    assert bm25.mode == "bm25" and bm25.n_queries >= 100
    assert bm25.ece < 0.02  # measured 0.0012 (5 folds, seed 0)


def test_a_calibration_with_the_old_four_features_reads_as_uncalibrated():
    old = {
        "mode": "bm25",
        "features": ["rel", "log_rank", "gap", "score"],
        "model": {"coef": [0.0] * 5, "center": [0.0] * 4, "scale": [1.0] * 4},
    }
    assert cal.calibrations({"bm25": old}) == {}
    assert cal.describe_auto({"bm25": old}, ["bm25"])["bm25"].startswith("uncalibrated")

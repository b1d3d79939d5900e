"""A calibration fitted on one chunking or weighting is set aside once the index changes.

P(relevant) is fitted on the scores of the index's chunks; after the index is re-chunked
(or BM25 re-weighted, or re-embedded) those scores mean something else, so ``stop="auto"``
uses the uncalibrated rule, and ``info`` says why, until ``tune`` runs again.
"""

from __future__ import annotations

import shutil

import pytest

from _support.stopping_corpus import calibrated_folder
from ctxselect import api
from ctxselect.api.calibrate import calibrate_index
from ctxselect.budget import calibration as _calibration
from ctxselect.config import BM25Params, ChunkSpec

QUERY = "topic3word marker3 context budget"


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("stale")
    return calibrated_folder(root), root


def copy_of(tuned, tmp_path):
    folder, _ = tuned
    target = tmp_path / "ix"
    shutil.copytree(folder, target)
    return target


def test_a_fresh_calibration_records_the_settings_it_was_fitted_with(tuned):
    index = api.open_index(tuned[0])
    found = index.calibration()
    assert found is not None and found.scoring == index.settings.scoring()
    assert "chunks auto-512 overlap 0 cl100k" in found.scoring
    assert index.info().settings["stop_auto"]["bm25"].startswith("calibrated:")


@pytest.mark.parametrize(
    "change",
    [
        {"chunk": ChunkSpec(chunker="tokens", size=64)},
        {"bm25": BM25Params(k1=0.9)},
    ],
    ids=["re-chunked", "re-weighted"],
)
def test_a_changed_index_stops_by_the_uncalibrated_rule_and_says_why(tuned, tmp_path, change):
    folder = copy_of(tuned, tmp_path)
    corpus = tuned[1] / "corpus"
    api.index_paths([corpus], folder, **change)
    index = api.open_index(folder)
    assert index.settings.calibration, "the stored calibration is kept, not deleted"
    assert index.calibration() is None and index.calibration("dense") is None
    selection = index.select(QUERY, 2000)
    assert "uncalibrated" in selection.stop and all(h.p_relevant is None for h in selection.chunks)
    said = index.info().settings["stop_auto"]["bm25"]
    assert said.startswith("uncalibrated:") and "fitted with chunks auto-512" in said
    assert "run `ctxselect tune` again" in said
    assert index.info().settings["calibration"] == {}
    with pytest.raises(Exception, match="not calibrated"):
        index.select(QUERY, 2000, stop=0.3)


def test_tuning_again_calibrates_the_changed_index(tuned, tmp_path):
    folder = copy_of(tuned, tmp_path)
    labeled = {"queries": tuned[1] / "queries.jsonl", "qrels": tuned[1] / "qrels.tsv"}
    api.index_paths([tuned[1] / "corpus"], folder, chunk=ChunkSpec(chunker="tokens", size=64))
    calibrate_index(folder, labeled["queries"], labeled["qrels"])
    index = api.open_index(folder)
    assert index.calibration() is not None
    assert "chunks tokens-64" in index.calibration().scoring


def test_a_calibration_from_before_settings_were_recorded_still_counts():
    stored = {"bm25": {"mode": "bm25"}}  # not readable: skipped, as before
    assert _calibration.calibrations(stored, "anything") == {}
    made = _calibration.Calibration.from_manifest(
        {
            **_calibration.Calibration(
                mode="bm25",
                model=_calibration.Model((0.0,) * 8, (0.0,) * 7, (1.0,) * 7),
                threshold=0.2,
                ece=0.0,
                log_loss=0.0,
                brier=0.0,
                base_rate=0.1,
                n_queries=10,
                n_chunks=100,
                depth=20,
                folds=5,
                turns=10,
                cache_factor=0.1,
                value=2000.0,
                chunk_tokens=100.0,
            ).to_manifest(),
        }
    )
    assert made is not None and made.scoring == ""
    old = {"bm25": {k: v for k, v in made.to_manifest().items() if k != "scoring"}}
    assert set(_calibration.calibrations(old, "chunks tokens-64 ...")) == {"bm25"}

"""Fixtures both adapter suites share: the bad options, an index with P(relevant)."""

from __future__ import annotations

import pytest

from _support.stopping_corpus import calibrated_folder
from ctxselect import api
from ctxselect.errors import ConfigError, UnknownNameError

BAD_OPTIONS = [
    ({"budget": 10}, ConfigError, "below the minimum"),
    ({"mode": "nope"}, UnknownNameError, "unknown mode 'nope'"),
    ({"mode": "dense"}, ConfigError, "needs dense vectors"),
    ({"mmr": 0.5}, ConfigError, "mmr compares"),
    ({"stop": "soon"}, ConfigError, "unknown stop rule"),
    ({"stop": 0.3}, ConfigError, r"no P\(relevant\) for mode 'bm25'"),
    ({"packer": "bogus"}, UnknownNameError, "unknown packer 'bogus': choose one of"),
    ({"format": "bogus"}, UnknownNameError, "unknown format 'bogus'"),
    ({"k": 0}, ConfigError, "k must be"),
    ({"budget": 800.0}, ConfigError, r"budget must be a whole number .*got 800.0 \(float\)"),
    ({"budget": "800"}, ConfigError, r"budget must be a whole number .*got '800' \(str\)"),
    ({"budget": None}, ConfigError, r"got None \(NoneType\): pass an int such as 2000"),
    ({"budget": True}, ConfigError, r"got True \(bool\)"),
    ({"stop": None}, ConfigError, "unknown stop rule None: use auto, none or"),
    ({"k": "5"}, ConfigError, "k must be a whole number of chunks >= 1, got '5': pass None"),
    ({"k": 2.0}, ConfigError, "k must be a whole number of chunks >= 1, got 2.0"),
    ({"mmr": "0.5"}, ConfigError, "mmr must be a number from 0 to 1, got '0.5'"),
    ({"promote": "no"}, ConfigError, "promote must be True or False, got 'no'"),
    ({"mode": 5}, UnknownNameError, "unknown mode 5: choose one of"),
    ({"packer": None}, UnknownNameError, "unknown packer None: choose one of"),
    ({"top_k": 5}, ConfigError, r"unknown argument 'top_k' \(did you mean 'k'\?\)"),
    ({"bugdet": 500}, ConfigError, r"unknown argument 'bugdet' \(did you mean 'budget'\?\)"),
]
"""(options, error, message): what both retrievers refuse when made, in the same words."""


@pytest.fixture(
    params=BAD_OPTIONS, ids=lambda case: ",".join(f"{k}={v!r}" for k, v in case[0].items())
)
def bad_option(request: pytest.FixtureRequest) -> tuple[dict[str, object], type[Exception], str]:
    """One bad option of :data:`BAD_OPTIONS`, with the error and message it must raise."""
    return request.param


@pytest.fixture(scope="module")
def tuned_dense(tmp_path_factory: pytest.TempPathFactory) -> api.Index:
    """A small labeled corpus indexed with the hash embedder, calibrated in every mode."""
    index = api.open_index(calibrated_folder(tmp_path_factory.mktemp("tuned-dense")))
    assert index.calibration("dense") is not None  # the stop threshold below is applicable
    return index

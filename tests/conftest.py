"""Shared fixtures: where the real IR collections are, and how their absence is handled."""

from __future__ import annotations

from pathlib import Path

import pytest

from _support.datasets import DATASETS_ENV, REPO, dataset_dir, datasets_root

__all__ = ["DATASETS_ENV", "REPO", "dataset_dir", "datasets_root"]


@pytest.fixture
def scifact_dir() -> Path:
    return dataset_dir("scifact")


@pytest.fixture
def nfcorpus_dir() -> Path:
    return dataset_dir("nfcorpus")


@pytest.fixture
def cranfield_dir() -> Path:
    return dataset_dir("cranfield")

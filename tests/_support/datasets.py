"""Where the real IR collections are, and how their absence is handled (tests and conftest).

Kept out of ``conftest.py`` so a test imports it by a name no other folder's conftest
shadows (``tests/stores/conftest.py`` is also a module named ``conftest``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATASETS_ENV = "CTXSELECT_DATASETS"


def datasets_root() -> Path:
    """``$CTXSELECT_DATASETS`` if set, else ``../shared/datasets`` beside the repository."""
    return Path(os.environ.get(DATASETS_ENV) or REPO.parent / "shared" / "datasets")


def dataset_dir(name: str) -> Path:
    """Return the folder of one collection; skip (or fail under CI) when it is absent."""
    path = datasets_root() / name
    if not (path / "corpus.jsonl").is_file():
        reason = f"dataset {name!r} not found at {path} (set {DATASETS_ENV} to its parent)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{reason}; under CI the quality floors must run, not skip")
        pytest.skip(reason)
    return path

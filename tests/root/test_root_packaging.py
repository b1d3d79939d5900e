"""Packaging metadata: what setuptools reads from pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_license_is_an_spdx_string_that_the_build_backend_supports() -> None:
    """PEP 639: a table license is deprecated (setuptools warns on every install)."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    license_ = data["project"]["license"]
    assert isinstance(license_, str), f"project.license must be an SPDX string, got {license_!r}"
    assert license_ == "Apache-2.0"
    # Only setuptools >= 77 reads an SPDX string; an older backend would reject it.
    requires = " ".join(data["build-system"]["requires"])
    match = re.search(r"setuptools>=(\d+)", requires)
    assert match and int(match.group(1)) >= 77, requires
    classifiers = data["project"].get("classifiers", [])
    assert not [c for c in classifiers if c.startswith("License ::")], classifiers

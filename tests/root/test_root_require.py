"""A missing extra reads the same whether it is imported or only looked for."""

from __future__ import annotations

import sys

import pytest

from ctxselect._require import require, require_installed
from ctxselect.errors import MissingExtraError

FEATURE = "the test feature"


def test_require_installed_finds_a_module_without_importing_it(monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "wave", raising=False)  # a stdlib module, rarely loaded
    require_installed("wave", extra="dense", feature=FEATURE)
    assert "wave" not in sys.modules


@pytest.mark.parametrize("module", ["no_such_package_here", "no_such_package_here.sub"])
def test_looking_for_a_missing_extra_says_what_importing_it_says(module) -> None:
    with pytest.raises(MissingExtraError) as imported:
        require(module, extra="dense", feature=FEATURE)
    with pytest.raises(MissingExtraError) as looked_for:
        require_installed(module, extra="dense", feature=FEATURE)
    assert str(looked_for.value) == str(imported.value)
    assert str(looked_for.value) == (
        "the test feature needs the Python package 'no_such_package_here', which is not "
        "installed: run pip install 'ctxselect[dense]'"
    )
    assert isinstance(looked_for.value, ImportError)


def test_a_module_blocked_in_sys_modules_counts_as_missing(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # what the extra tests use to hide it
    with pytest.raises(MissingExtraError, match="pip install 'ctxselect\\[dense\\]'"):
        require_installed("torch", extra="dense", feature=FEATURE)

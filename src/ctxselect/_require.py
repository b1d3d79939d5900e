"""Import on first use: optional dependencies (with an install hint when missing), and
the names a package offers from modules it should not load up front."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from ctxselect.errors import MissingExtraError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise MissingExtraError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise _missing(module, extra, feature) from exc


def require_installed(module: str, *, extra: str, feature: str) -> None:
    """Raise MissingExtraError, as :func:`require` does, unless ``module`` is installed;
    import nothing (for a heavy module that a run may never use)."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # its parent package is missing; it has no __spec__
        found = None
    if found is None:
        raise _missing(module, extra, feature)


def _missing(module: str, extra: str, feature: str) -> MissingExtraError:
    return MissingExtraError(
        f"{feature} needs the Python package {module.split('.')[0]!r}, which is not "
        f"installed: run pip install 'ctxselect[{extra}]'"
    )


def lazy(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` (PEP 562) that imports each name on first use.

    ``names`` maps an attribute of ``package`` to the module that defines it, so
    ``import ctxselect.api`` for a search does not load the write path it also offers.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    return __getattr__

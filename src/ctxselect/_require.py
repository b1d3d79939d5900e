"""Import optional dependencies on first use, with an install hint when missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from ctxselect.errors import MissingExtraError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise MissingExtraError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{feature} needs the Python package {module.split('.')[0]!r}, which is not "
            f"installed: run pip install 'ctxselect[{extra}]'"
        ) from exc

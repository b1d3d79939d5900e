"""The write functions' option checks: a bad value is a ``ConfigError`` before any index
folder is made or anything is written (``compact_fraction="0.5"`` once raised a
``TypeError`` after its commit)."""

from __future__ import annotations

import math
from typing import Any

from ctxselect.config import DEFAULT_COMPACT_FRACTION, MAX_BYTES
from ctxselect.errors import ConfigError


def check_max_bytes(max_bytes: object) -> None:
    """Refuse a ``max_bytes`` that is not None or a whole number of bytes >= 1.

    Raises:
        ConfigError: Naming the value, before any index folder is made.
    """
    if max_bytes is not None and not MAX_BYTES.valid(max_bytes):
        raise ConfigError(
            f"max_bytes must be a whole number of bytes >= 1 (or None for the index's own "
            f"limit), got {max_bytes!r}: files larger than it are skipped; pass e.g. "
            f"60_000_000"
        )


def check_write_options(compact_fraction: object, **flags: object) -> None:
    """Refuse a ``compact_fraction`` that is not None or a number >= 0, and a flag
    (``progress``, ``follow_symlinks``, ``rebuild``) that is not True or False, before
    anything is written.

    Raises:
        ConfigError: Naming the argument and the value.
    """
    fraction = compact_fraction
    number = isinstance(fraction, int | float) and not isinstance(fraction, bool)
    if fraction is not None and not (number and _finite_at_least_0(fraction)):
        raise ConfigError(
            f"compact_fraction must be a number >= 0 or None, got {fraction!r}: an index "
            f"compacts when the rows changed since its last compaction pass that share of "
            f"its chunks (default {DEFAULT_COMPACT_FRACTION}; None compacts only on request)"
        )
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be True or False, got {value!r}")


def _finite_at_least_0(value: Any) -> bool:
    return math.isfinite(value) and value >= 0


__all__ = ["check_max_bytes", "check_write_options"]

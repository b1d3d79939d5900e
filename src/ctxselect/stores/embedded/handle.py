"""What ``migrate``, ``reads`` and ``verify`` use of an open :class:`SQLiteStore`.

A Protocol, so those modules are typed without importing ``sqlite`` (which imports
them); ``SQLiteStore`` satisfies it.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ctxselect.stores.base import Snapshot


class StoreHandle(Protocol):
    """An open embedded index: its folder, its SQLite connection and a few reads."""

    folder: Path
    path: Path
    readonly: bool
    checksums: bool
    _conn: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[None]:
        """Group writes in one SQLite transaction."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """Pin every read inside to one committed generation."""
        ...

    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest, checked."""
        ...

    def snapshot(self, eager: bool | None = None, previous: Snapshot | None = None) -> Snapshot:
        """Return the last committed state."""
        ...

    def live_order(self) -> np.ndarray:
        """Return the row id of every live chunk, in chunk_id order."""
        ...

    def remove_orphans(self, *, durable: bool = False) -> list[str]:
        """Delete base files the committed manifest does not name; return their names."""
        ...

"""Vector caches keyed by model and content hash, so an unchanged text is embedded once.

A cache maps ``(model_id, text_key(text))`` to a vector. :class:`MemoryVectorCache`
lives in the process; :class:`FileVectorCache` keeps one ``.npz`` file per model in a
folder (benchmarks, tests). An index store backs the same protocol with its own table.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from ctxselect.errors import IndexCorruptError


@runtime_checkable
class VectorCache(Protocol):
    """Vectors already computed, by model and content hash."""

    def get_many(self, model_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the vectors of ``model_id`` found for ``keys`` (missing keys are absent)."""
        ...

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember ``vectors`` (key -> vector) for ``model_id``."""
        ...


class MemoryVectorCache:
    """A vector cache in a dict; nothing survives the process."""

    def __init__(self) -> None:
        self._vectors: dict[str, dict[str, np.ndarray]] = {}

    def __len__(self) -> int:
        return sum(len(v) for v in self._vectors.values())

    def get_many(self, model_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors of ``model_id`` among ``keys``."""
        known = self._vectors.get(model_id, {})
        return {key: known[key] for key in keys if key in known}

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember ``vectors`` for ``model_id`` (as float32 copies)."""
        known = self._vectors.setdefault(model_id, {})
        for key, vector in vectors.items():
            known[key] = np.array(vector, dtype=np.float32)


class FileVectorCache(MemoryVectorCache):
    """A vector cache in a folder: ``<model slug>.npz`` holds keys and vectors per model.

    Files are read on first use of a model and rewritten whole (write to a temporary
    file, then rename) on every ``put_many``, so an interrupted run keeps what it had.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        super().__init__()
        self.folder = Path(folder)

    def path(self, model_id: str) -> Path:
        """Return the file holding the vectors of ``model_id``."""
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-")[:60]
        digest = hashlib.sha256(model_id.encode()).hexdigest()[:12]
        return self.folder / f"{slug}-{digest}.npz"

    def get_many(self, model_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors of ``model_id`` among ``keys``, reading its file once."""
        self._load(model_id)
        return super().get_many(model_id, keys)

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Remember ``vectors`` and rewrite the model's file, keeping what others added."""
        self._load(model_id)
        on_disk = self._read(model_id)  # another process may have written since
        known = self._vectors[model_id]
        for key, vector in on_disk.items():
            known.setdefault(key, vector)
        super().put_many(model_id, vectors)
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(model_id)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".npz.tmp")
        with os.fdopen(fd, "wb") as handle:
            np.savez(
                handle,
                keys=np.array(list(known), dtype="S64"),
                vectors=np.stack(list(known.values())) if known else np.zeros((0, 0)),
            )
        os.replace(tmp, target)

    def _load(self, model_id: str) -> None:
        if model_id not in self._vectors:
            self._vectors[model_id] = self._read(model_id)

    def _read(self, model_id: str) -> dict[str, np.ndarray]:
        target = self.path(model_id)
        if not target.is_file():
            return {}
        try:
            with np.load(target) as data:
                keys = [k.decode("ascii") for k in data["keys"]]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, ValueError, KeyError) as exc:
            raise IndexCorruptError(
                f"vector cache {target} cannot be read ({exc}): delete the file to re-embed"
            ) from exc
        return dict(zip(keys, vectors, strict=True))

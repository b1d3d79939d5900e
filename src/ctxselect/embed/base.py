"""The Embedder seam: texts -> unit-length vectors, one row per text."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ctxselect.registry import Registry


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose dot product is their cosine similarity.

    Attributes:
        name: The registry name (``hash``, ``minilm``); the same in Python, CLI and manifest.
        dim: Length of every vector.
        model_id: Names the exact vectors this embedder makes (model and version): two
            embedders with the same ``model_id`` give the same vectors, so a cache or an
            index may be shared between them, and only between them.
    """

    name: str
    dim: int
    model_id: str

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return a float32 array of shape ``(len(texts), dim)`` with unit-length rows.

        Args:
            texts: Non-blank texts; callers (``embed_texts``) never pass blank ones.
            query: The texts are search queries rather than passages (models such as
                E5 or BGE prefix queries with an instruction; MiniLM ignores it).
        """
        ...


EMBEDDERS: Registry[Callable[..., Embedder]] = Registry("embedder")
"""embedder name -> factory taking keyword options (``dim``, ``device`` ...)."""


def text_key(text: str) -> str:
    """Return the cache key of ``text``: the hex SHA-256 of its UTF-8 bytes.

    A chunk is embedded as ``header + "\\n" + text`` (``ChunkTable.indexed_text``), so its
    key is the hash of its header and text: an unchanged chunk is never embedded twice.
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_blank(text: str) -> bool:
    """Tell whether ``text`` is empty or whitespace only (such texts are never embedded)."""
    return not text or text.isspace()

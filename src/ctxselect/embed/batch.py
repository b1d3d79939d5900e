"""Embed many texts: skip blank ones, reuse cached vectors, batch the rest with progress."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxselect.config import DEFAULT_EMBED_BATCH
from ctxselect.embed.base import Embedder, is_blank, text_key
from ctxselect.embed.cache import VectorCache
from ctxselect.errors import ConfigError

CHECKPOINT = 1024
"""Texts embedded between two writes to the cache (an interrupted run keeps its work)."""


@dataclass(slots=True)
class EmbedMeter:
    """What the model itself embedded: texts sent to it and the seconds it took (cached
    and blank texts are not counted), so a write can record the embedder's real speed.

    Attributes:
        texts: Texts the model embedded.
        seconds: Wall time of those calls.
    """

    texts: int = 0
    seconds: float = 0.0

    def rate(self) -> float:
        """Texts per second (0.0 before anything was embedded)."""
        return self.texts / self.seconds if self.seconds > 0 else 0.0


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    query: bool = False,
    cache: VectorCache | None = None,
    batch_size: int = DEFAULT_EMBED_BATCH,
    progress: bool = False,
    meter: EmbedMeter | None = None,
) -> np.ndarray:
    """Return one vector per text; blank texts get a zero row and never reach the model.

    Identical texts are embedded once. Passages (``query=False``) are looked up in and
    added to ``cache`` under ``(embedder.model_id, text_key(text))``; queries are not
    cached. Texts to embed are sorted by length before batching, so a batch pads little.

    Args:
        embedder: The model.
        texts: Texts in any order; the result has the same order.
        query: The texts are search queries.
        cache: Vectors computed before (e.g. a ``MemoryVectorCache`` or an index's).
        batch_size: Texts handed to the embedder at once.
        progress: Show a progress bar on stderr (chunks/s or queries/s, and an ETA).
        meter: Adds the texts the model embedded and the seconds it took.

    Returns:
        float32 array of shape ``(len(texts), embedder.dim)``.

    Raises:
        ConfigError: ``batch_size`` < 1, or the embedder returned the wrong shape.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    rows_of: dict[str, list[int]] = {}
    text_of: dict[str, str] = {}
    for row, text in enumerate(texts):
        if not is_blank(text):
            key = text_key(text)
            rows_of.setdefault(key, []).append(row)
            text_of[key] = text
    if query:
        cache = None  # query vectors are not kept
    found = cache.get_many(embedder.model_id, list(rows_of)) if cache is not None else {}
    for key, vector in found.items():
        out[rows_of[key]] = vector
    missing = sorted((k for k in rows_of if k not in found), key=lambda k: len(text_of[k]))
    if not missing:
        return out
    from tqdm import tqdm

    label = f"embedding ({embedder.name})"
    unit = "query" if query else "chunk"
    bar = tqdm(total=len(missing), desc=label, unit=unit, file=sys.stderr, disable=not progress)
    with bar:
        if progress or meter is not None:
            _load_model(embedder, query, bar)
        began = time.perf_counter()
        for start in range(0, len(missing), CHECKPOINT):
            keys = missing[start : start + CHECKPOINT]
            vectors = _embed_batches(embedder, [text_of[k] for k in keys], query, batch_size, bar)
            for key, vector in zip(keys, vectors, strict=True):
                out[rows_of[key]] = vector
            if cache is not None:
                cache.put_many(embedder.model_id, dict(zip(keys, vectors, strict=True)))
    if meter is not None:
        meter.texts += len(missing)
        meter.seconds += time.perf_counter() - began
    return out


def _load_model(embedder: Embedder, query: bool, bar: Any) -> None:
    """Let a lazily loaded model load before the clock starts (minilm loads torch for
    seconds on its first call): the load is not embedding work, so it must count neither
    in the bar's chunks/s and ETA nor in the throughput a write records for ``info``.

    An empty call embeds nothing (no text is embedded twice, no batch changes); the bar
    says what the wait is, then restarts its clock.
    """
    bar.set_postfix_str("loading the model")
    embedder.embed([], query=query)
    bar.set_postfix_str("", refresh=False)
    bar.reset()


def _embed_batches(
    embedder: Embedder, texts: list[str], query: bool, batch_size: int, bar: Any
) -> np.ndarray:
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        vectors = np.asarray(embedder.embed(batch, query=query), dtype=np.float32)
        if vectors.shape != (len(batch), embedder.dim):
            raise ConfigError(
                f"embedder {embedder.name!r} returned shape {vectors.shape} for "
                f"{len(batch)} texts: it must return one row of {embedder.dim} per text"
            )
        out[start : start + len(batch)] = vectors
        bar.update(len(batch))
    return out


class CachedEmbedder:
    """An embedder that goes through :func:`embed_texts`: cache, blank rows, batches, bar.

    It satisfies :class:`Embedder` itself (same ``name``, ``dim`` and ``model_id``), so
    dense retrieval can take it wherever it takes a plain embedder. With
    ``cache_queries``, query vectors are cached too, under the model id plus
    `` [query]`` (models that prefix queries embed a query unlike the same passage): an
    experiment asking the same queries of many configurations embeds each once.
    """

    def __init__(
        self,
        embedder: Embedder,
        cache: VectorCache | None = None,
        *,
        batch_size: int = DEFAULT_EMBED_BATCH,
        progress: bool = False,
        cache_queries: bool = False,
    ) -> None:
        self.inner = embedder
        self.cache = cache
        self.batch_size = batch_size
        self.progress = progress
        self.cache_queries = cache_queries
        self.name = embedder.name
        self.dim = embedder.dim
        self.model_id = embedder.model_id
        self.meter = EmbedMeter()  # passages only: what the model embedded, and how fast

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Embed ``texts`` through the cache (a progress bar only for passages)."""
        if query and self.cache_queries and self.cache is not None:
            return self._queries(texts, self.cache)
        return embed_texts(
            self.inner,
            texts,
            query=query,
            cache=self.cache,
            batch_size=self.batch_size,
            progress=self.progress and not query,
            meter=None if query else self.meter,
        )

    def _queries(self, texts: Sequence[str], cache: VectorCache) -> np.ndarray:
        """Query vectors from the cache, embedding (and keeping) the missing ones."""
        model_id = f"{self.model_id} [query]"
        keys = [text_key(text) for text in texts]
        found = cache.get_many(model_id, keys)
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            vectors = embed_texts(self.inner, list(missing.values()), query=True)
            fresh = dict(zip(missing, vectors, strict=True))
            cache.put_many(model_id, fresh)
            found.update(fresh)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

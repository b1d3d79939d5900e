"""The retrieval modes an index writes, as :class:`~ctxselect.index.writer.ModeOps`.

Keyword modes (:func:`mode_ops`) analyze text into postings; dense retrieval
(:func:`dense_ops`) embeds it. ``indexing`` asks :func:`resolve_embedder` what the
manifest will record of the embedder (name, model id, dimensions, ANN threshold). The
model is made on first use (:class:`LazyEmbedder`), so an update whose chunks are all in
the index's vector cache never loads it. Experiments (sweep, lab) build modes in memory
with :func:`retriever_for` and make their embedder with :func:`experiment_embedder`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect import embed as _embed
from ctxselect.config import (
    DEFAULT_ANN_THRESHOLD,
    DEFAULT_MODE,
    BM25Params,
    FuseSpec,
    settings_from_manifest,
)
from ctxselect.errors import ConfigError, IndexMismatchError, UnknownNameError
from ctxselect.index.writer import ModeOps, indexed_text
from ctxselect.retrieve import dense as _dense
from ctxselect.retrieve import dense_segments as _dense_segments
from ctxselect.retrieve._sparse import index_corpus, raw_arrays, raw_postings
from ctxselect.retrieve.base import RETRIEVERS, Retriever
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.stores.embedded.sqlite import SQLiteStore
from ctxselect.stores.embedded.vectors import SQLiteVectorCache
from ctxselect.types import Chunk, ChunkTable

EmbedderArg = str | _embed.Embedder | None
"""An embedder for dense retrieval: a registry name (``minilm``, ``hash``), an object,
``"none"`` to drop dense retrieval, or None to keep the index's own."""
NO_EMBEDDER = "none"


def mode_ops(bm25: BM25Params, names: Sequence[str] | None = None) -> dict[str, ModeOps]:
    """Return the write-path operations of every segment-capable mode (or of ``names``)."""
    ops: dict[str, ModeOps] = {}
    for mode in names if names is not None else RETRIEVERS.names():
        cls: Any = RETRIEVERS.get(mode)
        if not hasattr(cls, "arrays_from_postings"):
            continue  # a mode without segment support is not part of the keyword index
        params = retriever_params(mode, bm25)
        key, analyzer = cls.analysis(**params)
        ops[mode] = ModeOps(key, _analyze(analyzer), analyzer.terms, _finish(cls, params))
    return ops


def stored_mode_ops(
    store: SQLiteStore, manifest: Mapping[str, Any], *, progress: bool = False
) -> dict[str, ModeOps]:
    """Return the write-path operations of the modes an index holds (dense included)."""
    _, bm25 = settings_from_manifest(manifest)
    stored = [m for m in manifest.get("modes") or [] if m != "dense"]
    modes = mode_ops(bm25, stored or None)
    dense = manifest.get("embedder")
    if "dense" in (manifest.get("modes") or []) and isinstance(dense, dict):
        modes["dense"] = dense_ops(dense, store.vector_cache(), progress=progress)
    return modes


def _analyze(analyzer: Any) -> Callable[[Sequence[str]], Mapping[str, Any]]:
    def analyze(texts: Sequence[str]) -> Mapping[str, Any]:
        return raw_arrays(index_corpus(texts, analyzer))

    return analyze


def _finish(cls: Any, params: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Any]:
    def finish(raw: Mapping[str, Any]) -> Any:
        return cls.arrays_from_postings(raw_postings(raw), **params)

    return finish


class LazyEmbedder:
    """The index's embedder, made on first use: an update whose chunks are all in the
    vector cache never loads the model. Checks the model is the one the index records."""

    def __init__(self, spec: Mapping[str, Any], given: _embed.Embedder | None) -> None:
        self.name = str(spec["name"])
        self.dim = int(spec["dim"])
        self.model_id = str(spec["model_id"])
        self._model = given

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if self._model is None:
            made = _embed.make_embedder(self.name)
            if made.model_id != self.model_id:
                raise IndexMismatchError(
                    f"the index was embedded with {self.model_id!r} but the installed "
                    f"{self.name!r} embedder is {made.model_id!r}: re-embed it with "
                    f"`ctxselect index --embedder {self.name}`"
                )
            self._model = made
        return self._model.embed(texts, query=query)


def embedder_spec(embedder: _embed.Embedder, ann_threshold: int) -> dict[str, Any]:
    """What the manifest records of an index's embedder (``manifest["embedder"]``)."""
    return {
        "name": embedder.name,
        "model_id": embedder.model_id,
        "dim": int(embedder.dim),
        "ann_threshold": int(ann_threshold),
    }


def dense_ops(
    spec: Mapping[str, Any],
    cache: SQLiteVectorCache,
    *,
    given: _embed.Embedder | None = None,
    progress: bool = False,
) -> ModeOps:
    """The write-path operations of dense retrieval with the embedder ``spec`` names.

    Chunks are embedded through the index's vector cache (by content hash), in batches,
    with a progress bar; blank chunks are never embedded.
    """
    model = _embed.CachedEmbedder(LazyEmbedder(spec, given), cache, progress=progress)
    threshold = int(spec.get("ann_threshold", DEFAULT_ANN_THRESHOLD))

    def analyze(texts: Sequence[str]) -> Mapping[str, np.ndarray]:
        embedded = np.array([not _embed.is_blank(t) for t in texts], dtype=bool)
        return _dense_segments.raw_vectors(model.embed(texts), embedded)

    def finish(raw: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        return _dense_segments.base_arrays(raw, model.model_id, threshold)

    return ModeOps(
        analysis=f"dense:{model.model_id}",
        analyze=analyze,
        terms=lambda _text: [],
        finish=finish,
        compact=_dense_segments.compact_vectors,
        merge=_dense_segments.merge_vectors,
    )


def resolve_embedder(
    manifest: Mapping[str, Any], embedder: EmbedderArg, ann_threshold: int | None
) -> tuple[dict[str, Any] | None, _embed.Embedder | None]:
    """The embedder spec the index will record, and the embedder if one was named or given.

    A named embedder is made now, so a model that changed with an upgrade of its package
    shows as a changed spec (and the index is re-embedded); without a name the index's
    own spec is kept and its model made only if something needs embedding.
    """
    if ann_threshold is not None and (
        isinstance(ann_threshold, bool) or not isinstance(ann_threshold, int) or ann_threshold < 1
    ):
        raise ConfigError(f"ann_threshold must be a whole number >= 1, got {ann_threshold!r}")
    old = manifest.get("embedder") if isinstance(manifest.get("embedder"), dict) else None
    dropped = isinstance(embedder, str) and embedder == NO_EMBEDDER
    if dropped or (embedder is None and old is None):
        if ann_threshold is not None and not dropped:
            raise ConfigError(
                "ann_threshold needs dense retrieval: give an embedder too "
                "(`ctxselect index --embedder minilm --ann-threshold N`)"
            )
        return None, None
    threshold = ann_threshold or int((old or {}).get("ann_threshold", DEFAULT_ANN_THRESHOLD))
    if embedder is None:
        return {**(old or {}), "ann_threshold": threshold}, None
    made = _embed.make_embedder(embedder) if isinstance(embedder, str) else embedder
    return embedder_spec(made, threshold), made


def tuned_settings(
    manifest: Mapping[str, Any], dense: Mapping[str, Any] | None, model_changed: bool
) -> dict[str, Any]:
    """The manifest's ``default_mode``, ``fusion`` and ``tuning`` after a write.

    A tuned fusion holds for the model it was tuned with: a new model drops it, and a
    default mode needing dense vectors falls back to bm25 without them or without the
    tuning that chose it.
    """
    mode = str(manifest.get("default_mode", DEFAULT_MODE))
    if mode in _dense.EMBEDDING_MODES.names() and (dense is None or model_changed):
        mode = DEFAULT_MODE
    return {
        "default_mode": mode,
        "fusion": None if model_changed else manifest.get("fusion"),
        "tuning": None if model_changed else manifest.get("tuning"),
    }


def prune_vectors(store: SQLiteStore, dense: Mapping[str, Any]) -> None:
    """After a full build or a compaction: keep only the vectors of the live chunks, of
    the current model (the cache never outgrows the index by more than what changed
    since the last compaction)."""
    keys = [_embed.text_key(indexed_text(c)) for c in store.iter_chunks()]
    store.vector_cache().prune(str(dense["model_id"]), keys)


def keyword_modes() -> list[str]:
    """The modes built from the chunks' words alone: every mode but dense and hybrid."""
    return RETRIEVERS.names()


def embedding_modes() -> list[str]:
    """The modes that embed chunks and queries, so need an embedder: dense and hybrid."""
    return _dense.EMBEDDING_MODES.names()


def check_embedder(
    modes: Sequence[str], embedder: str | _embed.Embedder | None, command: str = "sweep"
) -> None:
    """Refuse dense and hybrid when ``command`` was given no embedder to build them with.

    Raises:
        ConfigError: A mode needs an embedder and ``embedder`` is None.
        UnknownNameError: ``embedder`` is a name no embedder is registered under.
    """
    if isinstance(embedder, str):
        _embed.EMBEDDERS.check(embedder)
    needy = [mode for mode in modes if mode in embedding_modes()]
    if needy and embedder is None:
        raise ConfigError(
            f"{command} mode {needy[0]} embeds the chunks and queries, and no embedder was "
            f"given: add --embedder minilm (needs ctxselect[dense]), or --embedder hash for a "
            f'quick model-free check (Python: embedder="minilm")'
        )


def experiment_embedder(
    embedder: str | _embed.Embedder | None,
    modes: Sequence[str],
    cache: _embed.VectorCache,
    *,
    command: str = "sweep",
    progress: bool = False,
) -> _embed.Embedder | None:
    """Make the embedder of the dense modes in ``modes`` once (None if there are none).

    ``embedder`` is a registry name or a model. Chunks and queries are looked up in
    ``cache`` by model id and content hash first, so a text met in several
    configurations, or in an earlier run sharing a file cache, is embedded once.

    Raises:
        ConfigError: A dense mode without an embedder (the message names ``command``).
        UnknownNameError: ``embedder`` is not a registered name.
        MissingExtraError: The embedder's extra is not installed.
    """
    check_embedder(modes, embedder, command)
    if embedder is None or not set(modes) & set(embedding_modes()):
        return None
    model = _embed.make_embedder(embedder) if isinstance(embedder, str) else embedder
    return _embed.CachedEmbedder(model, cache, progress=progress, cache_queries=True)


def retriever_params(mode: str, bm25: BM25Params) -> dict[str, Any]:
    """Keyword arguments a mode's ``build``/``load`` take from the index settings."""
    return {"params": bm25} if mode == "bm25" else {}


def retriever_for(
    chunks: Sequence[Chunk],
    mode: str,
    bm25: BM25Params | None = None,
    *,
    embedder: _embed.Embedder | None = None,
    fusion: FuseSpec | None = None,
) -> Retriever:
    """Build an in-memory retriever over ``chunks`` (used by experiments and tests).

    ``dense`` and ``hybrid`` need ``embedder`` (wrap it in ``embed.CachedEmbedder`` to
    reuse vectors); ``hybrid`` fuses bm25 with dense by ``fusion`` (default plain RRF).

    Raises:
        UnknownNameError: ``mode`` is not a retrieval mode.
        ConfigError: A dense mode without an embedder.
    """
    table = ChunkTable.from_chunks(list(chunks))
    params = retriever_params("bm25" if mode == "hybrid" else mode, bm25 or BM25Params())
    if mode in _dense.EMBEDDING_MODES.names():
        if embedder is None:
            raise ConfigError(
                f"mode {mode} embeds the chunks: give an embedder (`--embedder minilm`, "
                f"or `hash` for a fast check)"
            )
        if mode == "dense":
            return _dense.DenseRetriever.build(table, embedder)
        return HybridRetriever.build(table, embedder, fusion, **params)
    if mode not in RETRIEVERS.names():
        raise UnknownNameError("mode", mode, [*keyword_modes(), *embedding_modes()])
    return RETRIEVERS.get(mode).build(table, **params)


__all__ = [
    "NO_EMBEDDER",
    "EmbedderArg",
    "LazyEmbedder",
    "check_embedder",
    "dense_ops",
    "embedder_spec",
    "embedding_modes",
    "experiment_embedder",
    "keyword_modes",
    "mode_ops",
    "prune_vectors",
    "resolve_embedder",
    "retriever_for",
    "retriever_params",
    "stored_mode_ops",
    "tuned_settings",
]

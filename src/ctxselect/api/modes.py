"""The write side of the mode table: the :class:`~ctxselect.index.writer.ModeOps` an index
writes for each stored mode of ``retrieve.modes.MODES``.

Each spec's ``store`` picks its writer (:data:`WRITERS`): postings modes analyze text
(:func:`postings_ops`); vector modes embed it (:func:`dense_ops`). ``write`` asks
``api.embedder_choice`` what the manifest will record of the embedder (name, model id,
dimensions, ANN threshold). The model is made on first use (:class:`LazyEmbedder`), so
an update whose chunks are all in the index's vector cache never loads it. Experiments
(sweep, lab) build modes in memory with ``retrieve.modes.retriever_for`` and make their
embedder with :func:`experiment_embedder`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ctxselect import embed as _embed
from ctxselect.config import (
    DEFAULT_MODE,
    BM25Params,
)
from ctxselect.embed.windows import (  # for the interfaces
    DEFAULT_INDEX_EMBED_LONG,
    EMBED_LONG,
    long_policy_of,
)
from ctxselect.errors import ConfigError, IndexMismatchError
from ctxselect.index.writer import ModeOps, indexed_text
from ctxselect.manifest import EmbedderSpec, Manifest
from ctxselect.retrieve import dense_segments as _dense_segments
from ctxselect.retrieve._sparse import index_corpus, raw_arrays, raw_postings
from ctxselect.retrieve.modes import (  # the lists are re-exported for the interfaces
    MODES,
    POSTINGS,
    VECTORS,
    ModeContext,
    ModeSpec,
    embedding_modes,
    fusion_modes,
    keyword_modes,
)
from ctxselect.stores import Store, VectorStore

EmbedderArg = str | _embed.Embedder | None
"""An embedder for dense retrieval: a registry name (``minilm``, ``hash``), an object,
``"none"`` to drop dense retrieval, or None to keep the index's own."""
NO_EMBEDDER = "none"


@dataclass(frozen=True, slots=True)
class WriteInputs:
    """What the writers of a write take: the settings, the embedder, the store.

    Attributes:
        store: The index's store (its vector cache keeps embeddings by content hash).
        bm25: The index's BM25 settings.
        embedder: What the manifest records of the embedder (None: no vector modes).
        given: The embedder itself when one was named or given (else made on first use).
        progress: Show a progress bar while embedding.
    """

    store: Store
    bm25: BM25Params
    embedder: EmbedderSpec | None = None
    given: _embed.Embedder | None = None
    progress: bool = False


def write_ops(inputs: WriteInputs, names: Sequence[str] | None = None) -> dict[str, ModeOps]:
    """Return the write-path operations of every stored mode (or of ``names``), in table
    order; modes that need an embedder only when ``inputs.embedder`` is given.

    Raises:
        UnknownNameError: A name in ``names`` is not a registered mode.
        ConfigError: A mode is stored in a way no writer knows.
    """
    for name in names or ():
        MODES.get(name)  # an index holding a mode this installation lacks is refused
    ops: dict[str, ModeOps] = {}
    for spec in MODES:
        if spec.store is None or (names is not None and spec.name not in names):
            continue  # a fusion, or a mode the index does not hold
        if spec.needs_embedder and inputs.embedder is None:
            continue
        writer = WRITERS.get(spec.store)
        if writer is None:
            raise ConfigError(
                f"mode {spec.name} is stored as {spec.store!r}, which no writer knows: "
                f"add one to ctxselect.api.modes.WRITERS ({', '.join(WRITERS)})"
            )
        ops[spec.name] = writer(spec, inputs)
    return ops


def postings_ops(spec: ModeSpec, inputs: WriteInputs) -> ModeOps:
    """The write-path operations of a keyword mode stored as postings."""
    cls: Any = spec.retriever
    params = spec.params(ModeContext(inputs.bm25))
    key, analyzer = cls.analysis(**params)
    return ModeOps(key, _analyze(analyzer), analyzer.terms, _finish(cls, params))


def has_vectors(names: Iterable[str]) -> bool:
    """Whether any of the modes ``names`` is stored as vectors (unknown names: no)."""
    return any(name in MODES and MODES.get(name).store == VECTORS for name in names)


def stored_mode_ops(
    store: Store, manifest: Manifest, *, progress: bool = False
) -> dict[str, ModeOps]:
    """Return the write-path operations of the modes an index holds (vector modes too)."""
    inputs = WriteInputs(store, manifest.bm25, manifest.embedder, progress=progress)
    return write_ops(inputs, manifest.modes or None)


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

    def __init__(self, spec: EmbedderSpec, given: _embed.Embedder | None) -> None:
        self.name = spec.name
        self.dim = spec.dim
        self.model_id = spec.model_id
        self._model = given

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if self._model is None:
            made = _embed.make_embedder(self.name, model_id=self.model_id)
            if made.model_id != self.model_id:
                raise IndexMismatchError(
                    f"the index was embedded with {self.model_id!r} but the installed "
                    f"{self.name!r} embedder is {made.model_id!r}: re-embed it with "
                    f"`ctxselect index --embedder {self.name}`"
                )
            self._model = made
        return self._model.embed(texts, query=query)


def embedder_spec(embedder: _embed.Embedder, ann_threshold: int) -> EmbedderSpec:
    """What the manifest records of an index's embedder (``Manifest.embedder``)."""
    return EmbedderSpec(embedder.name, embedder.model_id, int(embedder.dim), int(ann_threshold))


def throughput(chunks: int, seconds: float, model_id: str, workers: int = 0) -> dict[str, Any]:
    """The manifest's record of an embedding run: ``chunks`` embedded in ``seconds``
    (``workers`` > 0: by that many worker processes, wall time, their model loads in)."""
    record: dict[str, Any] = {
        "chunks": chunks,
        "seconds": round(seconds, 6),  # a hash model takes well under a millisecond
        "chunks_per_s": round(chunks / seconds, 2) if seconds > 0 else 0.0,
        "model_id": model_id,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if workers:
        record["workers"] = workers
    return {"throughput": record}


def dense_ops(
    spec: EmbedderSpec,
    cache: VectorStore,
    *,
    given: _embed.Embedder | None = None,
    progress: bool = False,
) -> ModeOps:
    """The write-path operations of dense retrieval with the embedder ``spec`` names.

    Chunks are embedded through the index's vector cache (by content hash), in batches,
    with a progress bar; blank chunks are never embedded.
    """
    model = _embed.CachedEmbedder(LazyEmbedder(spec, given), cache, progress=progress)
    threshold = spec.ann_threshold

    def analyze(texts: Sequence[str]) -> Mapping[str, np.ndarray]:
        embedded = np.array([not _embed.is_blank(t) for t in texts], dtype=bool)
        return _dense_segments.raw_vectors(model.embed(texts), embedded)

    def finish(raw: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        return _dense_segments.base_arrays(raw, model.model_id, threshold)

    def measured() -> dict[str, Any]:
        meter = model.meter
        if not meter.texts:  # everything came from the cache: keep the last figure
            return {}
        return throughput(meter.texts, meter.seconds, model.model_id)

    return ModeOps(
        analysis=f"dense:{model.model_id}",
        analyze=analyze,
        terms=lambda _text: [],
        finish=finish,
        compact=_dense_segments.compact_vectors,
        merge=_dense_segments.merge_vectors,
        measured=measured,
    )


def vector_ops(spec: ModeSpec, inputs: WriteInputs) -> ModeOps:
    """The write-path operations of a mode stored as vectors (:func:`dense_ops`)."""
    if inputs.embedder is None:
        raise ConfigError(f"mode {spec.name} stores vectors: the index records no embedder")
    cache = inputs.store.vector_cache()
    return dense_ops(inputs.embedder, cache, given=inputs.given, progress=inputs.progress)


WRITERS: dict[str, Callable[[ModeSpec, WriteInputs], ModeOps]] = {
    POSTINGS: postings_ops,
    VECTORS: vector_ops,
}
"""A spec's ``store`` -> the function making its write-path operations."""


def tuned_settings(manifest: Manifest, dense: EmbedderSpec | None, model_changed: bool) -> Manifest:
    """``manifest`` with the ``default_mode``, ``fusion`` and ``tuning`` it keeps after a write.

    A tuned fusion holds for the model it was tuned with: a new model drops it, and a
    default mode needing dense vectors falls back to bm25 without them or without the
    tuning that chose it.
    """
    mode = manifest.default_mode
    if mode in embedding_modes() and (dense is None or model_changed):
        mode = DEFAULT_MODE
    return dataclasses.replace(
        manifest,
        default_mode=mode,
        fusion=None if model_changed else manifest.fusion,
        tuning=None if model_changed else manifest.tuning,
    )


def prune_vectors(store: Store, dense: EmbedderSpec) -> None:
    """After a full build or a compaction: keep only the vectors of the live chunks, of
    the current model (the cache never outgrows the index by more than what changed
    since the last compaction)."""
    keys = [_embed.text_key(indexed_text(c)) for c in store.iter_chunks()]
    store.vector_cache().prune(dense.model_id, keys)


def check_embedder(
    modes: Sequence[str], embedder: str | _embed.Embedder | None, command: str = "sweep"
) -> None:
    """Refuse the modes that need an embedder when ``command`` was given none.

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
    """Make the embedder of the modes in ``modes`` that need one, once (None: none do).

    ``embedder`` is a registry name or a model. Chunks and queries are looked up in
    ``cache`` by model id and content hash first, so a text met in several
    configurations, or in an earlier run sharing a file cache, is embedded once.

    Raises:
        ConfigError: A mode that needs an embedder, without one (the message names
            ``command``).
        UnknownNameError: ``embedder`` is not a registered name.
        MissingExtraError: The embedder's extra is not installed.
    """
    check_embedder(modes, embedder, command)
    if embedder is None or not set(modes) & set(embedding_modes()):
        return None
    model = _embed.make_embedder(embedder) if isinstance(embedder, str) else embedder
    return _embed.CachedEmbedder(model, cache, progress=progress, cache_queries=True)


__all__ = [
    "DEFAULT_INDEX_EMBED_LONG",
    "EMBED_LONG",
    "NO_EMBEDDER",
    "WRITERS",
    "EmbedderArg",
    "LazyEmbedder",
    "WriteInputs",
    "check_embedder",
    "dense_ops",
    "embedder_spec",
    "embedding_modes",
    "experiment_embedder",
    "fusion_modes",
    "has_vectors",
    "keyword_modes",
    "long_policy_of",
    "postings_ops",
    "prune_vectors",
    "stored_mode_ops",
    "tuned_settings",
    "vector_ops",
    "write_ops",
]

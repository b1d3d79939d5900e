"""The one table of retrieval modes: name -> :class:`ModeSpec` (the read side).

A mode is one module (its retriever class) plus one row at the end of this file. The spec
says how to build the mode in memory (experiments), how to load it from an index
snapshot's segments, how the write path stores it (``store``: :data:`POSTINGS` or
:data:`VECTORS`; ``ctxselect.api.modes`` turns that into write operations, since the read
path never imports the write path), what it does (``summary``), whether it needs an
embedder and which modes it fuses. Code elsewhere asks the spec (``spec.needs_embedder``,
``spec.fuses``) instead of comparing mode names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxselect.config import BM25Params, FuseSpec
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.retrieve import dense_segments as _dense_segments
from ctxselect.retrieve.base import Retriever
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.dense import DenseRetriever, Encoder
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.retrieve.segments import load_segments
from ctxselect.retrieve.tfidf import TfidfRetriever, TfidfSumRetriever
from ctxselect.types import Chunk, ChunkTable, Rows, Segments

POSTINGS = "postings"
"""Stored as postings: the retriever class has ``analysis`` and ``arrays_from_postings``."""
VECTORS = "vectors"
"""Stored as one embedding per chunk, made by the index's embedder."""


@dataclass(frozen=True, slots=True)
class ModeContext:
    """What building or loading a mode may take from the index settings and the caller.

    Attributes:
        bm25: The index's BM25 settings.
        embedder: The model of the modes that need one (None: not available).
        fusion: How fusion modes fuse (the tuned spec of an index, else plain RRF).
    """

    bm25: BM25Params = field(default_factory=BM25Params)
    embedder: Encoder | None = None
    fusion: FuseSpec = field(default_factory=FuseSpec)


Build = Callable[[ChunkTable, ModeContext], Retriever]
Load = Callable[[Rows, Segments, ModeContext], Retriever]
Combine = Callable[[Mapping[str, Retriever], ModeContext], Retriever]


def no_params(_context: ModeContext) -> dict[str, Any]:
    """The keyword arguments of a mode that takes no index settings: none."""
    return {}


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """One retrieval mode: how to build, load, store and explain it.

    Attributes:
        name: The mode's name in Python, CLI, MCP and the index manifest.
        summary: What the mode does, in one line (help texts and error messages).
        retriever: The retriever class (its ``mode`` is ``name``).
        build: Table and context -> the retriever, in memory (None for a fusion).
        load: Rows, the mode's stored segments and context -> the retriever (None: the
            mode is not stored, e.g. a fusion, which is made from its parts).
        store: How the write path stores it: :data:`POSTINGS`, :data:`VECTORS`, or None.
        params: Context -> the keyword arguments of the class's ``build``/``load`` and,
            for postings, ``analysis``/``arrays_from_postings``.
        needs_embedder: It embeds chunks and queries, so needs an embedder.
        fuses: The modes it fuses (empty: it ranks on its own).
        combine: Parts by name and context -> the fused retriever (fusions only).
        length_normalized: Its scores use the mean chunk length, whose drift since the
            last compaction ``ctxselect info`` reports.
    """

    name: str
    summary: str
    retriever: Any
    build: Build | None = None
    load: Load | None = None
    store: str | None = None
    params: Callable[[ModeContext], dict[str, Any]] = no_params
    needs_embedder: bool = False
    fuses: tuple[str, ...] = ()
    combine: Combine | None = None
    length_normalized: bool = False


class ModeTable:
    """Mode name -> :class:`ModeSpec`; lists modes without an embedder first, then the rest."""

    def __init__(self) -> None:
        self._specs: dict[str, ModeSpec] = {}

    def add(self, spec: ModeSpec) -> ModeSpec:
        """Register ``spec``; return it.

        Raises:
            ConfigError: The name is taken or is not the class's mode, a fused mode is not
                registered or needs an embedder the spec does not ask for, or the spec
                lacks what its kind needs (``combine`` for a fusion, ``build`` otherwise).
                Or its retriever's ``search``/``search_many`` take no ``mask`` keyword.
        """
        if spec.name in self._specs:
            raise ConfigError(f"mode {spec.name!r} is already registered: remove it first")
        own = getattr(spec.retriever, "mode", spec.name)
        if own != spec.name:
            raise ConfigError(
                f"mode {spec.name!r} names the class {spec.retriever.__name__}, whose mode is "
                f"{own!r}: give the spec the class's own mode name"
            )
        missing = [m for m in spec.fuses if m not in self._specs]
        if missing:
            raise ConfigError(
                f"mode {spec.name!r} fuses {', '.join(missing)}, which are not registered: "
                f"add them to the table first"
            )
        needy = [m for m in spec.fuses if self._specs[m].needs_embedder]
        if needy and not spec.needs_embedder:
            raise ConfigError(
                f"mode {spec.name!r} fuses {', '.join(needy)}, which needs an embedder: "
                f"give the spec needs_embedder=True"
            )
        if (spec.combine is None) == bool(spec.fuses) or (spec.build is None) != bool(spec.fuses):
            raise ConfigError(
                f"mode {spec.name!r} needs either fuses and combine (a fusion) or build: "
                f"give one of the two"
            )
        unmasked = [m for m in ("search", "search_many") if not _takes_mask(spec.retriever, m)]
        if unmasked:
            raise ConfigError(
                f"mode {spec.name!r}: {spec.retriever.__name__}.{' and '.join(unmasked)} "
                f"take no mask keyword, so a filtered search could not rank only the rows "
                f"it allows: add `*, mask=None` (ranking only mask.allow rows, e.g. with "
                f"ctxselect.retrieve.filters.deepened) as the Retriever protocol says"
            )
        self._specs[spec.name] = spec
        return spec

    def remove(self, name: str) -> ModeSpec:
        """Unregister the mode ``name`` and return its spec.

        Raises:
            UnknownNameError: No such mode.
            ConfigError: Another mode fuses it.
        """
        spec = self.get(name)
        users = [s.name for s in self if name in s.fuses]
        if users:
            raise ConfigError(f"mode {name!r} is fused by {', '.join(users)}: remove those first")
        del self._specs[name]
        return spec

    def get(self, name: str) -> ModeSpec:
        """Return the spec of ``name`` or raise an error listing the valid names.

        Raises:
            UnknownNameError: No such mode.
        """
        spec = self._specs.get(name)
        if spec is None:
            raise UnknownNameError("mode", name, self._specs)
        return spec

    def names(self) -> list[str]:
        """Every mode name: those without an embedder (sorted), then the others (sorted)."""
        return [s.name for s in self]

    def __iter__(self) -> Iterator[ModeSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: (s.needs_embedder, s.name)))

    def __contains__(self, name: object) -> bool:
        return name in self._specs


MODES = ModeTable()
"""The retrieval modes; the rows are at the end of this module."""


def _takes_mask(retriever: Any, method: str) -> bool:
    """Whether ``retriever.method`` takes a ``mask`` keyword (read once, at registration)."""
    try:
        return "mask" in inspect.signature(getattr(retriever, method)).parameters
    except (AttributeError, TypeError, ValueError):  # no such method, or no signature
        return False


def keyword_modes() -> list[str]:
    """The modes built from the chunks' words alone (no embedder)."""
    return [s.name for s in MODES if not s.needs_embedder]


def embedding_modes() -> list[str]:
    """The modes that embed chunks and queries, so need an embedder."""
    return [s.name for s in MODES if s.needs_embedder]


def fusion_modes() -> list[str]:
    """The modes that fuse other modes' rankings."""
    return [s.name for s in MODES if s.fuses]


def vector_mode() -> str:
    """The stored mode whose chunk vectors MMR compares (the first mode stored as vectors).

    Raises:
        ConfigError: No mode is stored as vectors.
    """
    for spec in MODES:
        if spec.store == VECTORS:
            return spec.name
    raise ConfigError("no retrieval mode stores chunk vectors: register one (see retrieve/modes)")


def require_embedder(mode: str, context: ModeContext) -> Encoder:
    """Return the context's embedder for ``mode``, which needs one.

    Raises:
        ConfigError: The mode needs an embedder and the context has none.
    """
    if context.embedder is None:
        raise ConfigError(
            f"mode {mode} embeds the chunks: give an embedder (`--embedder minilm`, "
            f"or `hash` for a fast check)"
        )
    return context.embedder


def build_mode(table: ChunkTable, mode: str, context: ModeContext | None = None) -> Retriever:
    """Build the retriever of ``mode`` over ``table`` in memory (a fusion builds its parts).

    Raises:
        UnknownNameError: ``mode`` is not a retrieval mode.
        ConfigError: The mode needs an embedder and ``context`` has none.
    """
    spec = MODES.get(mode)
    context = context or ModeContext()
    if spec.needs_embedder:
        require_embedder(mode, context)
    if spec.combine is not None:
        parts = {name: build_mode(table, name, context) for name in spec.fuses}
        return spec.combine(parts, context)
    if spec.build is None:  # ModeTable.add refuses this; kept for type checkers
        raise ConfigError(f"mode {mode} cannot be built in memory")
    return spec.build(table, context)


def retriever_for(
    chunks: Sequence[Chunk],
    mode: str,
    bm25: BM25Params | None = None,
    *,
    embedder: Encoder | None = None,
    fusion: FuseSpec | None = None,
) -> Retriever:
    """Build an in-memory retriever over ``chunks`` (used by experiments and tests).

    Modes that need an embedder need ``embedder`` (wrap it in ``embed.CachedEmbedder`` to
    reuse vectors); a fusion fuses its parts by ``fusion`` (default plain RRF).

    Raises:
        UnknownNameError: ``mode`` is not a retrieval mode.
        ConfigError: A mode that needs an embedder, without one.
    """
    context = ModeContext(bm25 or BM25Params(), embedder, fusion or FuseSpec())
    return build_mode(ChunkTable.from_chunks(list(chunks)), mode, context)


def keyword_spec(
    name: str,
    retriever: Any,
    summary: str,
    *,
    params: Callable[[ModeContext], dict[str, Any]] = no_params,
    length_normalized: bool = False,
) -> ModeSpec:
    """The spec of a keyword mode stored as postings (a ``SparseRetriever`` subclass with
    ``build``, ``load``, ``analysis`` and ``arrays_from_postings``)."""

    def build(table: ChunkTable, context: ModeContext) -> Retriever:
        built: Retriever = retriever.build(table, **params(context))
        return built

    def load(rows: Rows, segments: Segments, context: ModeContext) -> Retriever:
        return load_segments(retriever, rows, segments, **params(context))

    return ModeSpec(
        name,
        summary,
        retriever,
        build=build,
        load=load,
        store=POSTINGS,
        params=params,
        length_normalized=length_normalized,
    )


def _bm25_params(context: ModeContext) -> dict[str, Any]:
    return {"params": context.bm25}


def _build_dense(table: ChunkTable, context: ModeContext) -> Retriever:
    return DenseRetriever.build(table, require_embedder(DenseRetriever.mode, context))


def _load_dense(rows: Rows, segments: Segments, context: ModeContext) -> Retriever:
    embedder = require_embedder(DenseRetriever.mode, context)
    return _dense_segments.load_segments(rows, segments, embedder)


def _combine_hybrid(parts: Mapping[str, Retriever], context: ModeContext) -> Retriever:
    return HybridRetriever(parts["bm25"], parts["dense"], context.fusion)  # type: ignore[arg-type]


MODES.add(
    keyword_spec(
        "bm25",
        BM25Retriever,
        "Lucene BM25 over stemmed words, stopwords dropped (bm25s's analysis)",
        params=_bm25_params,
        length_normalized=True,
    )
)
MODES.add(keyword_spec("tfidf", TfidfRetriever, "cosine of tf x idf vectors over words"))
MODES.add(
    keyword_spec("tfidf-sum", TfidfSumRetriever, "sum of tf / words x idf over the query's words")
)
MODES.add(
    ModeSpec(
        "dense",
        "cosine of chunk and query embeddings (exact, or HNSW above the ANN threshold)",
        DenseRetriever,
        build=_build_dense,
        load=_load_dense,
        store=VECTORS,
        needs_embedder=True,
    )
)
MODES.add(
    ModeSpec(
        "hybrid",
        "bm25 and dense rankings fused (plain RRF, or the spec `ctxselect tune` chose)",
        HybridRetriever,
        needs_embedder=True,
        fuses=("bm25", "dense"),
        combine=_combine_hybrid,
    )
)

__all__ = [
    "MODES",
    "POSTINGS",
    "VECTORS",
    "ModeContext",
    "ModeSpec",
    "ModeTable",
    "build_mode",
    "embedding_modes",
    "fusion_modes",
    "keyword_modes",
    "keyword_spec",
    "no_params",
    "require_embedder",
    "retriever_for",
    "vector_mode",
]

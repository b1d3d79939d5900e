"""The index manifest as one typed, versioned value: how an index was built and tuned.

An index records its settings in a manifest of JSON values by key. :class:`Manifest` is
the only code that reads those keys: :meth:`Manifest.from_dict` is the one migration
path (every version this code has written, oldest first, is read, and missing keys get
the defaults the code always used), and :meth:`Manifest.to_dict` writes the current
version. Composition code (read path and write path alike) reads attributes.

Versions (``manifest_version``):

- 1: every manifest written before the key existed (ctxselect 0.1 on). Keys were added
  over time, never renamed: ``chunk``, ``bm25``, ``modes``, ``roots``, ``default_mode``,
  ``created``, ``updated``; then ``compacted``; then ``embedder`` (``ann_threshold``
  optional), ``fusion`` and ``tuning``; then ``calibration``; then ``identifiers`` inside
  ``bm25``. Each may be absent; a ``bm25`` without ``identifiers`` was built without
  identifier parts (False), whatever ``BM25Params``'s default is now; then
  ``chunk_layout`` (absent: the chunker's layout before it was recorded, ``""``); then
  ``throughput`` (absent: no write has measured the embedder); then ``embed_long_auto``
  (absent: ``embed_long="auto"`` chose no policy; the model id records the policy); then
  ``max_bytes`` (absent: the index's limit was not recorded; a re-scan uses the default).
- 2: the same keys, written by :meth:`Manifest.to_dict` with ``manifest_version``.

Unknown keys: a top-level key this version does not interpret (the store's own
bookkeeping, such as ``schema_version``, ``checksums`` or the base file's layout) is kept,
as read, in :attr:`Manifest.extra`; ``to_dict`` never writes it, and stores set keys one
by one, so it stays on disk untouched. An unknown key inside a setting (``chunk``,
``bm25``, ``fusion``, ``embedder``) is reported as damage: a setting this code cannot
apply would silently change results. A manifest of a newer version is refused with the
command that upgrades ctxselect.

Calibrations stay the dicts :mod:`ctxselect.budget.calibration` writes (by mode), and
that module reads them: their format has its own version (the feature list), and an
unreadable one means "uncalibrated", not damage. ``tuning`` is a free-form summary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxselect.config import (
    BM25_KEY,
    DEFAULT_ANN_THRESHOLD,
    DEFAULT_MODE,
    BM25Params,
    ChunkSpec,
    FuseSpec,
)
from ctxselect.errors import IndexCorruptError, IndexMismatchError

MANIFEST_VERSION = 2
"""The version :meth:`Manifest.to_dict` writes."""
VERSION_KEY = "manifest_version"
_OLDEST = 1  # a manifest without VERSION_KEY


@dataclass(frozen=True, slots=True)
class EmbedderSpec:
    """What an index records of the embedder its dense vectors were made with.

    Attributes:
        name: The embedder's registry name (``minilm``, ``hash``).
        model_id: The exact model (and version) the vectors were made with.
        dim: Dimensions of a vector.
        ann_threshold: From this many embedded chunks on, dense search uses an HNSW graph.
    """

    name: str
    model_id: str
    dim: int
    ann_threshold: int = DEFAULT_ANN_THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-able form the manifest keeps."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class StoreState:
    """What the store's bookkeeping says of the committed segments (read-only: the store
    writes these keys itself, and :meth:`Manifest.to_dict` never does).

    Attributes:
        generation: The commit number.
        segments: Numbers of the delta segments, oldest first.
        delta_rows: Rows in delta segments since the last compaction.
        dead_rows: Deleted rows since the last compaction.
        counts: ``documents``, ``chunks``, ``tokens`` as of the commit (empty: not recorded).
        base_rows: Rows of the base segment (None: the index has no base yet).
    """

    generation: int = 0
    segments: tuple[int, ...] = ()
    delta_rows: int = 0
    dead_rows: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    base_rows: int | None = None


@dataclass(frozen=True, slots=True)
class Manifest:
    """An index's manifest: its settings, tuning, timestamps and store state.

    Attributes:
        chunk: How documents were cut into chunks.
        chunk_layout: How the chunker cut a given text then (``SizedChunker.layout``,
            e.g. ``auto``'s routes); an index write re-chunks every document when the
            chunker's layout has changed since. Empty: before layouts were recorded.
        bm25: The BM25 settings of the keyword modes.
        modes: The retrieval modes the index stores, in the order built.
        roots: Absolute paths the index was built from.
        default_mode: The mode a search uses when it names none.
        embedder: The embedder of the dense vectors (None: the index has none).
        fusion: How ``hybrid`` fuses, as ``tune`` stored it (None: plain RRF).
        tuning: What the last ``tune`` found (None: never tuned).
        throughput: The embedder's speed in the last write that embedded chunks:
            ``chunks``, ``seconds``, ``chunks_per_s``, ``model_id``, ``at`` (None: never
            measured; a write that embeds nothing new keeps the previous figure).
        embed_long_auto: Why ``embed_long="auto"`` chose the policy in the model id, as
            ``embed.windows.AutoChoice.to_dict`` writes it (None: not chosen by auto).
        max_bytes: The file size limit the index was last written with: a re-scan without
            one uses it (None: not recorded, the default applies).
        calibration: By mode, the P(relevant) calibration as ``budget.calibration`` writes
            it (read it with ``budget.calibration.calibrations``).
        created: When the index was first built (ISO 8601; empty: not yet).
        updated: When it was last written.
        compacted: When its base segment was last rebuilt (empty: at ``created``).
        built: An index write recorded settings (a new, empty store has none yet).
        version: The manifest version it was read from (:data:`MANIFEST_VERSION` if new).
        state: The store's bookkeeping of its segments.
        extra: Top-level keys this version does not interpret, as read.
    """

    chunk: ChunkSpec = field(default_factory=ChunkSpec)
    chunk_layout: str = ""
    bm25: BM25Params = field(default_factory=BM25Params)
    modes: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    default_mode: str = DEFAULT_MODE
    embedder: EmbedderSpec | None = None
    fusion: FuseSpec | None = None
    tuning: dict[str, Any] | None = None
    throughput: dict[str, Any] | None = None
    embed_long_auto: dict[str, Any] | None = None
    max_bytes: int | None = None
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: str = ""
    updated: str = ""
    compacted: str = ""
    built: bool = False
    version: int = MANIFEST_VERSION
    state: StoreState = field(default_factory=StoreState)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, index: str | None = None) -> Manifest:
        """Read a manifest of any version this code knows, with defaults for missing keys.

        Args:
            raw: The manifest's keys and JSON values, as the store returns them.
            index: The index folder, for messages.

        Raises:
            IndexCorruptError: A key the manifest needs has the wrong shape.
            IndexMismatchError: The manifest is of a newer version than this code reads.
        """
        return _Reader(raw, index).manifest()

    def to_dict(self) -> dict[str, Any]:
        """Return the keys of the current version that an index write records.

        The store's bookkeeping (:attr:`state`) and unknown keys (:attr:`extra`) are not
        included: the store keeps them.
        """
        return {
            VERSION_KEY: MANIFEST_VERSION,
            "chunk": dataclasses.asdict(self.chunk),
            "chunk_layout": self.chunk_layout,
            BM25_KEY: dataclasses.asdict(self.bm25),
            "modes": list(self.modes),
            "roots": list(self.roots),
            "default_mode": self.default_mode,
            "embedder": self.embedder.to_dict() if self.embedder else None,
            "fusion": dataclasses.asdict(self.fusion) if self.fusion else None,
            "tuning": self.tuning,
            "throughput": self.throughput,
            "embed_long_auto": self.embed_long_auto,
            "max_bytes": self.max_bytes,
            "calibration": {mode: dict(c) for mode, c in self.calibration.items()},
            "created": self.created,
            "updated": self.updated,
            "compacted": self.compacted,
        }

    def scoring(self) -> str:
        """The settings that shape a mode's scores, in words: chunking, BM25 and the
        embedder's model. A P(relevant) calibration is fitted on scores made with them
        and holds only while they stay (``budget.calibration.Calibration.scoring``)."""
        c, b = self.chunk, self.bm25
        words = "identifiers on" if b.identifiers else "identifiers off"
        stem = f"stem {'on' if b.stem else 'off'}, stop words {'on' if b.stopwords else 'off'}"
        model = self.embedder.model_id if self.embedder else "none"
        return (
            f"chunks {c.chunker}-{c.size} overlap {c.overlap} {c.tokenizer}; "
            f"bm25 k1 {b.k1:g} b {b.b:g} {stem}, {words}; embedder {model}"
        )

    def describe(self) -> dict[str, Any]:
        """The settings as ``ctxselect info`` shows them (JSON-able): ``chunk``, ``bm25``,
        ``default_mode``, ``roots``, ``embedder``, ``fusion``, ``tuning``."""
        written = self.to_dict()
        keys = ("chunk", BM25_KEY, "default_mode", "roots", "embedder", "fusion", "tuning")
        return {key: written[key] for key in keys}


# -- reading ---------------------------------------------------------------------------

_SETTINGS = {"chunk", BM25_KEY, "fusion", "embedder"}
_KNOWN = {
    VERSION_KEY,
    *_SETTINGS,
    "chunk_layout",
    "modes",
    "roots",
    "default_mode",
    "tuning",
    "throughput",
    "embed_long_auto",
    "max_bytes",
    "calibration",
    "created",
    "updated",
    "compacted",
    "generation",
    "segments",
    "pending",
    "counts",
}


def _whole(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


class _Reader:
    """One read of a raw manifest: each key checked, with the damage named by key."""

    def __init__(self, raw: Mapping[str, Any], index: str | None) -> None:
        self.index = index
        if not isinstance(raw, Mapping):
            raise self.damaged("manifest", f"it is a {type(raw).__name__}, not an object")
        self.raw = raw

    def damaged(self, key: str, why: str) -> IndexCorruptError:
        folder = self.index or "DIR"
        where = f"index {self.index}" if self.index else "the index"
        return IndexCorruptError(
            f"the manifest of {where} is damaged ({key!r}: {why}): run `ctxselect verify "
            f"--index {folder}`, then rebuild the index with `rm -r {folder} && ctxselect "
            f"index PATH... --index {folder}`"
        )

    def manifest(self) -> Manifest:
        version = self.version()
        return Manifest(
            chunk=self.spec("chunk", ChunkSpec) or ChunkSpec(),
            chunk_layout=self.text("chunk_layout"),
            bm25=self.bm25(),
            modes=self.strings("modes"),
            roots=self.strings("roots"),
            default_mode=self.text("default_mode", DEFAULT_MODE),
            embedder=self.embedder(),
            fusion=self.spec("fusion", FuseSpec),
            tuning=self.mapping("tuning"),
            throughput=self.mapping("throughput"),
            embed_long_auto=self.mapping("embed_long_auto"),
            max_bytes=self.max_bytes(),
            calibration=self.calibration(),
            created=self.text("created"),
            updated=self.text("updated"),
            compacted=self.text("compacted"),
            built="chunk" in self.raw,
            version=version,
            state=self.state(),
            extra={k: v for k, v in self.raw.items() if k not in _KNOWN},
        )

    def version(self) -> int:
        version = self.raw.get(VERSION_KEY, _OLDEST)
        if not _whole(version, _OLDEST):
            raise self.damaged(VERSION_KEY, f"{version!r} is not a version number")
        if version > MANIFEST_VERSION:
            where = f"index {self.index}" if self.index else "the index"
            raise IndexMismatchError(
                f"{where} has manifest version {version}, newer than the {MANIFEST_VERSION} "
                f"this ctxselect reads: upgrade it with `pip install -U ctxselect`"
            )
        return int(version)

    def spec(self, key: str, cls: Any) -> Any:
        """A settings dataclass from its dict (None when absent or null)."""
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.damaged(key, f"{value!r} is not an object")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise self.damaged(key, f"unknown setting {', '.join(map(repr, unknown))}")
        for name, item in value.items():
            kind = type(fields[name].default)
            if kind in (str, bool) and not isinstance(item, kind):
                raise self.damaged(key, f"{name} is {item!r}, not a {kind.__name__}")
        try:
            return cls(**value)
        except (TypeError, ValueError) as exc:  # ConfigError is a ValueError
            raise self.damaged(key, str(exc)) from exc

    def bm25(self) -> BM25Params:
        """The BM25 settings; written before identifier parts existed: without them."""
        params = self.spec(BM25_KEY, BM25Params)
        if params is None:
            return BM25Params(identifiers=False) if "chunk" in self.raw else BM25Params()
        if "identifiers" not in self.raw[BM25_KEY]:
            return dataclasses.replace(params, identifiers=False)
        return params

    def embedder(self) -> EmbedderSpec | None:
        value = self.raw.get("embedder")
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.damaged("embedder", f"{value!r} is not an object")
        unknown = sorted(set(value) - {f.name for f in dataclasses.fields(EmbedderSpec)})
        names_ok = all(isinstance(value.get(k), str) and value.get(k) for k in ("name", "model_id"))
        threshold = value.get("ann_threshold", DEFAULT_ANN_THRESHOLD)
        if unknown or not names_ok or not _whole(value.get("dim"), 1) or not _whole(threshold, 1):
            raise self.damaged(
                "embedder",
                "it needs a name and a model_id (text), dim and ann_threshold (whole numbers "
                f">= 1) and nothing else, got {dict(value)!r}",
            )
        return EmbedderSpec(value["name"], value["model_id"], value["dim"], threshold)

    def max_bytes(self) -> int | None:
        value = self.raw.get("max_bytes")
        if value is not None and not _whole(value, 1):
            raise self.damaged("max_bytes", f"{value!r} is not a whole number of bytes >= 1")
        return None if value is None else int(value)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise self.damaged(key, f"{value!r} is not a list of text")
        return tuple(value)

    def text(self, key: str, default: str = "") -> str:
        value = self.raw.get(key, default)
        if not isinstance(value, str):
            raise self.damaged(key, f"{value!r} is not text")
        return value

    def mapping(self, key: str) -> dict[str, Any] | None:
        value = self.raw.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise self.damaged(key, f"{value!r} is not an object")
        return None if value is None else dict(value)

    def calibration(self) -> dict[str, dict[str, Any]]:
        value = self.mapping("calibration") or {}
        if not all(isinstance(c, Mapping) for c in value.values()):
            raise self.damaged("calibration", "a mode's calibration is not an object")
        return {str(mode): dict(c) for mode, c in value.items()}

    def counts(self, key: str) -> dict[str, int]:
        value = self.mapping(key) or {}
        if not all(_whole(n) for n in value.values()):
            raise self.damaged(key, f"{value!r} holds something other than counts")
        return {str(k): int(n) for k, n in value.items()}

    def state(self) -> StoreState:
        generation = self.raw.get("generation", 0)
        segments = self.raw.get("segments") or []
        if not _whole(generation):
            raise self.damaged("generation", f"{generation!r} is not a commit number")
        if not isinstance(segments, list) or not all(_whole(s, 1) for s in segments):
            raise self.damaged("segments", f"{segments!r} is not a list of segment numbers")
        pending = self.counts("pending")
        base = self.raw.get("base")
        rows: Any = base.get("rows") if isinstance(base, Mapping) else None
        if base is not None and not _whole(rows):
            raise self.damaged("base", "it has no row count")
        return StoreState(
            generation=int(generation),
            segments=tuple(segments),
            delta_rows=pending.get("delta_rows", 0),
            dead_rows=pending.get("dead_rows", 0),
            counts=self.counts("counts"),
            base_rows=None if base is None else int(rows),
        )


__all__ = ["MANIFEST_VERSION", "VERSION_KEY", "EmbedderSpec", "Manifest", "StoreState"]

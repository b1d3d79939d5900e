"""Settings of every stage, their defaults, and the one place where precedence is decided.

Precedence, highest first: explicit argument (CLI flag or Python kwarg), environment
variable (``CTXSELECT_*``), the index manifest, the default below.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxselect.errors import ConfigError

DEFAULT_TOKENIZER = "cl100k"
DEFAULT_CHUNKER = "auto"
DEFAULT_CHUNK_SIZE = 512
DEFAULT_MODE = "bm25"
DEFAULT_K = 10
DEFAULT_PACKER = "skip"
DEFAULT_FORMAT = "markdown"
DEFAULT_INDEX_DIR = ".ctxselect"
INDEX_ENV = "CTXSELECT_INDEX"
DATASETS_ENV = "CTXSELECT_DATASETS"
# Incremental index updates (docs/12-updates.md).
DEFAULT_COMPACT_FRACTION = 0.1
"""Compact when pending rows (delta rows plus deleted rows) pass this share of live chunks:
searches stay within ~1% of a rebuild's avgdl drift at typical churn, and merges amortise."""
MAX_DELTA_SEGMENTS = 8
"""Merge the delta segments into one when there are more: a search reads each of them."""
TEXTS_IN_MEMORY_MAX = 200_000
"""Up to this many chunks an opened index keeps every chunk's text in memory (fastest
search); above it, a hit's text is read from the store by row id (bounded memory)."""
RELOAD_CHECK_SECONDS = 0.02
"""An open index asks the store for a newer generation at most this often (the check
costs ~2 us, a search ~30 us); commits made by the same process are seen at once."""
DEFAULT_WATCH_INTERVAL = 2.0
"""Seconds between two scans of ``ctxselect index --watch``."""


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """How documents are cut into chunks.

    ``size`` is in tokens of ``tokenizer`` for the ``tokens`` and ``markdown`` chunkers,
    and in characters for ``paragraph`` (the chapter's rule). ``auto`` picks ``markdown``
    for Markdown files and ``tokens`` for everything else.
    """

    chunker: str = DEFAULT_CHUNKER
    size: int = DEFAULT_CHUNK_SIZE
    overlap: int = 0
    tokenizer: str = DEFAULT_TOKENIZER

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ConfigError(f"chunk size must be at least 1, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise ConfigError(
                f"chunk overlap must be >= 0 and smaller than the size {self.size}, "
                f"got {self.overlap}"
            )


@dataclass(frozen=True, slots=True)
class BM25Params:
    """Lucene-style BM25 settings; defaults as bm25s (k1 = 1.5, b = 0.75).

    Lucene's own BM25Similarity defaults to k1 = 1.2; bm25s's 1.5 is kept so our figures
    compare directly with the bm25s numbers published for BEIR.
    """

    k1: float = 1.5
    b: float = 0.75
    stem: bool = True
    stopwords: bool = True

    def __post_init__(self) -> None:
        if self.k1 < 0:
            raise ConfigError(f"BM25 k1 must be >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise ConfigError(f"BM25 b must be between 0 and 1, got {self.b}")


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """How ranked chunks are fitted into a token budget."""

    budget: int
    packer: str = DEFAULT_PACKER
    format: str = DEFAULT_FORMAT
    dedup: bool = True
    merge: bool = True

    def __post_init__(self) -> None:
        if self.budget < 0:
            raise ConfigError(f"budget must be a number of tokens >= 0, got {self.budget}")


def env_or(name: str, default: str | None = None) -> str | None:
    """Return the environment variable ``name`` if set and non-empty, else ``default``."""
    value = os.environ.get(name, "")
    return value if value else default


def resolve_index_dir(index: str | os.PathLike[str] | None) -> str:
    """Pick the index folder: argument, then ``CTXSELECT_INDEX``, then ``./.ctxselect``."""
    if index:
        return os.fspath(index)
    return env_or(INDEX_ENV, DEFAULT_INDEX_DIR) or DEFAULT_INDEX_DIR


# Dense and hybrid retrieval (embed/, retrieve/dense.py, retrieve/hybrid.py, tuning.py).

DEFAULT_EMBEDDER = "minilm"
DEFAULT_EMBED_BATCH = 32
EMBEDDER_ENV = "CTXSELECT_EMBEDDER"
# Exact search is one matrix product and costs under 1 ms a query at SciFact's size
# (5k chunks); from about 50k chunks an HNSW graph answers faster at recall@10 >= 0.98
# (bench/dense_hybrid.py measures both; docs/13-dense-hybrid.md).
DEFAULT_ANN_THRESHOLD = 50_000
# Each side contributes its top 1,000 chunks; zscore and minmax are taken over that pool.
# Measured (tuning CV, nDCG@10): depth 1000 beat 100 by 0.002 on SciFact, 0.006 on NFCorpus.
DEFAULT_FUSE_DEPTH = 1000
DEFAULT_MMR_LAMBDA = 0.7


@dataclass(frozen=True, slots=True)
class FuseSpec:
    """How a keyword ranking and a dense ranking are fused into one (``hybrid`` mode).

    Attributes:
        method: ``rrf`` (reciprocal rank fusion, Cormack et al. 2009) or ``convex``
            (a weighted sum of normalised scores, Bruch et al. 2023).
        k: RRF's rank constant: a chunk at rank r contributes ``1 / (k + r)``.
        norm: How ``convex`` puts the two score scales on one: ``minmax`` or ``zscore``.
        weight: Share of the dense side, from 0 (keyword only) to 1 (dense only); RRF
            weighs each list's contributions by it too.
        depth: How many chunks each side contributes to the fusion.
    """

    method: str = "rrf"
    k: float = 60.0
    norm: str = "minmax"
    weight: float = 0.5
    depth: int = DEFAULT_FUSE_DEPTH

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int | float) or self.k <= 0:
            raise ConfigError(f"fusion k must be a number > 0 (60 is usual), got {self.k!r}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int | float):
            raise ConfigError(f"fusion weight must be a number from 0 to 1, got {self.weight!r}")
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"fusion weight must be from 0 to 1, got {self.weight}")
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise ConfigError(f"fusion depth must be a whole number >= 1, got {self.depth!r}")

    def label(self) -> str:
        """Describe the spec in one short line, e.g. ``convex zscore w=0.60``."""
        if self.method == "rrf":
            return f"rrf k={self.k:g} w={self.weight:.2f}"
        return f"{self.method} {self.norm} w={self.weight:.2f}"


def settings_from_manifest(manifest: Mapping[str, Any]) -> tuple[ChunkSpec, BM25Params]:
    """Return the chunking and BM25 settings an index manifest records (defaults if none)."""
    chunk = ChunkSpec(**manifest["chunk"]) if "chunk" in manifest else ChunkSpec()
    bm25 = BM25Params(**manifest["bm25"]) if "bm25" in manifest else BM25Params()
    return chunk, bm25

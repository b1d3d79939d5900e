"""Settings of every stage, their defaults, and the one place where precedence is decided.

Precedence, highest first: explicit argument (CLI flag or Python kwarg), environment
variable (``CTXSELECT_*``), the index manifest, the default below.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

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

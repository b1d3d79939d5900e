"""ctxselect: decide what goes into an LLM's context window.

Chunk a corpus, rank its chunks (TF-IDF, BM25), and select the best ones that fit a
token budget, measured on labeled queries.
"""

from ctxselect.api import Index, build_index, chunk_file, index_paths, open_index, retriever_for
from ctxselect.config import BM25Params, BudgetSpec, ChunkSpec
from ctxselect.errors import (
    ConfigError,
    CtxselectError,
    IndexMismatchError,
    IndexNotFoundError,
    InputError,
    MissingExtraError,
    NotFoundError,
)
from ctxselect.types import (
    Chunk,
    ChunkTable,
    Document,
    Explanation,
    Hit,
    IndexInfo,
    IndexReport,
    Selection,
)

__all__ = [
    "BM25Params",
    "BudgetSpec",
    "Chunk",
    "ChunkSpec",
    "ChunkTable",
    "ConfigError",
    "CtxselectError",
    "Document",
    "Explanation",
    "Hit",
    "Index",
    "IndexInfo",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexReport",
    "InputError",
    "MissingExtraError",
    "NotFoundError",
    "Selection",
    "build_index",
    "chunk_file",
    "index_paths",
    "open_index",
    "retriever_for",
]

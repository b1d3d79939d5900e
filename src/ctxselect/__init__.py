"""ctxselect: decide what goes into an LLM's context window.

Chunk a corpus, rank its chunks (TF-IDF, BM25), and select the best ones that fit a
token budget, measured on labeled queries.
"""

from ctxselect.api import Index, build_index, chunk_file, index_paths, open_index, retriever_for
from ctxselect.config import BM25Params, BudgetSpec, ChunkSpec
from ctxselect.errors import (
    ConfigError,
    CtxselectError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexWriteError,
    InputError,
    MissingExtraError,
    NotFoundError,
)
from ctxselect.indexing import (
    add_documents,
    add_paths,
    compact_index,
    remove_documents,
    verify_index,
)
from ctxselect.types import (
    Chunk,
    ChunkTable,
    CompactReport,
    Document,
    Explanation,
    Hit,
    IndexInfo,
    IndexReport,
    Selection,
    VerifyReport,
)
from ctxselect.watching import watch_paths

__all__ = [
    "BM25Params",
    "BudgetSpec",
    "Chunk",
    "ChunkSpec",
    "ChunkTable",
    "CompactReport",
    "ConfigError",
    "CtxselectError",
    "Document",
    "Explanation",
    "Hit",
    "Index",
    "IndexCorruptError",
    "IndexInfo",
    "IndexLockedError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexReport",
    "IndexWriteError",
    "InputError",
    "MissingExtraError",
    "NotFoundError",
    "Selection",
    "VerifyReport",
    "add_documents",
    "add_paths",
    "build_index",
    "chunk_file",
    "compact_index",
    "index_paths",
    "open_index",
    "remove_documents",
    "retriever_for",
    "verify_index",
    "watch_paths",
]

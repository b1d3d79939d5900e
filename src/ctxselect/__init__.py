"""ctxselect: decide what goes into an LLM's context window.

Chunk a corpus, rank its chunks (TF-IDF, BM25), and select the best ones that fit a
token budget, measured on labeled queries.
"""

from ctxselect._require import lazy
from ctxselect.config import BM25Params, BudgetSpec, ChunkSpec
from ctxselect.errors import (
    ConfigError,
    CtxselectError,
    IndexAccessError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexWriteError,
    InputError,
    MissingExtraError,
    NotFoundError,
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

# The verbs load on first use, through ``ctxselect.api`` (which loads its write side on
# first use in turn): `import ctxselect` stays light, and a read never pays for the write path.
_VERBS = (
    "Index",
    "open_index",
    "retriever_for",
    "add_documents",
    "add_paths",
    "build_index",
    "chunk_file",
    "compact_index",
    "index_paths",
    "remove_documents",
    "verify_index",
    "watch_paths",
)
__getattr__ = lazy(__name__, dict.fromkeys(_VERBS, "ctxselect.api"))

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
    "IndexAccessError",
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

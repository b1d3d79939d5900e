"""ctxselect: decide what goes into an LLM's context window.

Chunk a corpus, rank its chunks (TF-IDF, BM25), and select the best ones that fit a
token budget, measured on labeled queries.
"""

from ctxselect._require import lazy
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

# The verbs load on first use: `import ctxselect` stays light, and a read never pays for
# the write path.
__getattr__ = lazy(
    __name__,
    {
        "Index": "ctxselect.api.read",
        "open_index": "ctxselect.api.read",
        "retriever_for": "ctxselect.api.read",
        "add_documents": "ctxselect.api.write",
        "add_paths": "ctxselect.api.write",
        "build_index": "ctxselect.api.write",
        "chunk_file": "ctxselect.api.write",
        "compact_index": "ctxselect.api.write",
        "index_paths": "ctxselect.api.write",
        "remove_documents": "ctxselect.api.write",
        "verify_index": "ctxselect.api.write",
        "watch_paths": "ctxselect.api.watch",
    },
)

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

"""embed: texts -> vectors (dense retrieval), with a content-hash cache.

Importing this package registers every embedder; the real model's runtime is imported
only when one is made (``ctxselect[dense]``, ``ctxselect[fast]``).
"""

from ctxselect.embed.base import EMBEDDERS, Embedder, is_blank, text_key
from ctxselect.embed.batch import CachedEmbedder, embed_texts
from ctxselect.embed.cache import FileVectorCache, MemoryVectorCache, VectorCache
from ctxselect.embed.factory import make_embedder
from ctxselect.embed.hashing import HashEmbedder
from ctxselect.embed.minilm import MiniLMEmbedder
from ctxselect.embed.static import WordLlamaEmbedder

__all__ = [
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "FileVectorCache",
    "HashEmbedder",
    "MemoryVectorCache",
    "MiniLMEmbedder",
    "VectorCache",
    "WordLlamaEmbedder",
    "embed_texts",
    "is_blank",
    "make_embedder",
    "text_key",
]

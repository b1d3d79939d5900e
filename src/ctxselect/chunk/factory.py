"""Build a chunker from a :class:`ChunkSpec`."""

from __future__ import annotations

# Imported for their registration side effect in CHUNKERS.
from ctxselect.chunk import auto as _auto  # noqa: F401
from ctxselect.chunk import code as _code  # noqa: F401
from ctxselect.chunk import markdown as _markdown  # noqa: F401
from ctxselect.chunk import paragraph as _paragraph  # noqa: F401
from ctxselect.chunk import pdf as _pdf  # noqa: F401
from ctxselect.chunk import rst as _rst  # noqa: F401
from ctxselect.chunk import tokens as _tokens  # noqa: F401
from ctxselect.chunk.base import CHUNKERS, Chunker
from ctxselect.config import ChunkSpec
from ctxselect.tokens.counters import get_counter


def make_chunker(spec: ChunkSpec) -> Chunker:
    """Return the chunker ``spec.chunker`` with the spec's size, overlap and tokenizer.

    Raises:
        UnknownNameError: The chunker or tokenizer name is not registered.
        ConfigError: The size or overlap does not suit the chunker.
    """
    factory = CHUNKERS.get(spec.chunker)
    return factory(size=spec.size, overlap=spec.overlap, counter=get_counter(spec.tokenizer))


def chunk_layout(spec: ChunkSpec) -> str:
    """Return how ``spec``'s chunker cuts text today (see ``SizedChunker.layout``)."""
    return str(getattr(make_chunker(spec), "layout", ""))

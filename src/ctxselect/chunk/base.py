"""The Chunker seam: Document -> list of Chunk with exact offsets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ctxselect.registry import Registry
from ctxselect.types import Chunk, Document


@runtime_checkable
class Chunker(Protocol):
    """Cuts one document into self-contained chunks.

    Every chunk satisfies ``doc.text[chunk.start:chunk.end] == chunk.text``, chunks come
    in document order with ``ordinal`` 0, 1, 2, ..., and ``chunk_id`` is
    ``f"{doc.doc_id}#{ordinal}"``. Empty or whitespace-only chunks are never produced.
    """

    name: str

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` in document order."""
        ...


CHUNKERS: Registry[Callable[..., Chunker]] = Registry("chunker")

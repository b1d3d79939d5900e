"""The Store seam: where documents, chunks, index artefacts and the manifest live.

The embedded SQLite store is the default; a Milvus store is planned behind the same
seam, so chunking, budget selection and evaluation never see which one is in use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ctxselect.types import Chunk, ChunkTable, Document


@runtime_checkable
class Store(Protocol):
    """Persistent home of one index."""

    uri: str

    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest (schema version, settings, timestamps)."""
        ...

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Replace the manifest."""
        ...

    def doc_hashes(self) -> dict[str, str]:
        """Return ``{doc_id: content_hash}`` of every stored document."""
        ...

    def write_documents(
        self, documents: Sequence[Document], chunks: Sequence[Chunk], remove: Sequence[str]
    ) -> None:
        """Insert or replace ``documents`` with their ``chunks``; delete ``remove``."""
        ...

    def chunk_table(self) -> ChunkTable:
        """Return every chunk as a column table in chunk_id order."""
        ...

    def iter_chunks(self) -> Iterator[Chunk]:
        """Yield every chunk in chunk_id order."""
        ...

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk or raise NotFoundError."""
        ...

    def get_document(self, doc_id: str) -> Document:
        """Return one document or raise NotFoundError."""
        ...

    def span_text(self, doc_id: str, start: int, end: int) -> str:
        """Return ``document.text[start:end]``."""
        ...

    def write_arrays(self, prefix: str, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the artefact arrays stored under ``prefix``."""
        ...

    def read_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """Return the artefact arrays stored under ``prefix`` (empty when none)."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Group writes so they commit together or not at all."""
        ...

    def counts(self) -> dict[str, int]:
        """Return ``{"documents": n, "chunks": m}``."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...

"""Chunk one file without indexing it (``ctxselect chunk``): see how a file would be cut."""

from __future__ import annotations

import os
import warnings

from ctxselect import chunk as _chunk
from ctxselect import ingest as _ingest
from ctxselect.config import ChunkSpec
from ctxselect.errors import InputError
from ctxselect.types import Chunk


def chunk_file(path: str | os.PathLike[str], spec: ChunkSpec | None = None) -> list[Chunk]:
    """Load one file (or BEIR corpus) and return its chunks, without indexing.

    An empty file gives ``[]`` and a ``UserWarning`` saying so; so does each source file
    ``code`` (or ``auto``) cut by tokens because it has no grammar or does not parse.

    Raises:
        InputError: The file gave no document: unreadable (for a PDF: no text layer,
            encrypted, ...), binary, too large, of an unsupported type, HTML without text.
    """
    loaded = _ingest.load_paths([path])
    problem = loaded.report.skip_reason(os.fspath(path))
    if problem:
        raise InputError(f"cannot chunk {problem}")
    spec = spec or ChunkSpec()
    if not loaded.documents:
        warnings.warn(f"{os.fspath(path)} is empty or whitespace only: no chunks", stacklevel=2)
    for doc_id, why in _chunk.token_fallbacks(loaded.documents, spec.chunker):
        warnings.warn(f"{doc_id}: cut by tokens, not parsed as code ({why})", stacklevel=2)
    chunker = _chunk.make_chunker(spec)
    return [c for doc in loaded.documents for c in chunker.chunk(doc)]


__all__ = ["chunk_file"]

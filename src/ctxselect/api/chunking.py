"""Chunk one file without indexing it (``ctxselect chunk``): see how a file would be cut."""

from __future__ import annotations

import os
import warnings

from ctxselect import chunk as _chunk
from ctxselect import ingest as _ingest
from ctxselect.config import MAX_BYTES, ChunkSpec
from ctxselect.errors import ConfigError, InputError
from ctxselect.types import Chunk


def chunk_file(
    path: str | os.PathLike[str],
    spec: ChunkSpec | None = None,
    *,
    max_bytes: int = _ingest.DEFAULT_MAX_BYTES,
) -> list[Chunk]:
    """Load one file (or BEIR corpus) and return its chunks, without indexing.

    ``max_bytes`` is ``index``'s limit: a larger file (a BEIR corpus: record) is refused
    before it is read, with the message ``index`` gives when it skips one.

    An empty file gives ``[]`` and a ``UserWarning`` saying so; so does each source file
    ``code`` (or ``auto``) cut by tokens because it has no grammar or does not parse.

    Raises:
        InputError: The file gave no document: unreadable (for a PDF: no text layer,
            encrypted, ...), binary, above ``max_bytes``, of an unsupported type, HTML
            without text.
        ConfigError: ``max_bytes`` is not a whole number >= 1, or ``spec`` is not a
            ChunkSpec.
    """
    MAX_BYTES.check(max_bytes)
    if spec is not None and not isinstance(spec, ChunkSpec):
        raise ConfigError(
            f"spec must be a ChunkSpec, got {type(spec).__name__} {spec!r:.60}: pass "
            f"ChunkSpec(chunker=..., size=...), or None for the defaults"
        )
    loaded = _ingest.load_paths([path], max_bytes=max_bytes)
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


DEFAULT_MAX_BYTES = _ingest.DEFAULT_MAX_BYTES
"""Files above this many bytes are refused, as ``index`` skips them."""

__all__ = ["DEFAULT_MAX_BYTES", "chunk_file"]

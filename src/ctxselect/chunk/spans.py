"""Span helpers shared by the chunkers: trimming, size checks, and building Chunk values."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from ctxselect.config import ChunkSpec
from ctxselect.types import Chunk, Document

NONSPACE = re.compile(r"\S")


class Piece(NamedTuple):
    """A span ``text[start:end]`` and its token count."""

    start: int
    end: int
    n_tokens: int


class Row(NamedTuple):
    """A finished chunk span before it becomes a :class:`Chunk`."""

    start: int
    end: int
    n_tokens: int
    header: str = ""
    parent_id: str = ""


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Return ``(start, end)`` moved inwards past whitespace; equal values when blank."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def has_text(text: str, start: int, end: int) -> bool:
    """Return True when ``text[start:end]`` holds a non-whitespace character."""
    return NONSPACE.search(text, start, end) is not None


def check_size(chunker: str, size: int, overlap: int) -> None:
    """Raise ConfigError unless ``size >= 1`` and ``0 <= overlap < size`` (ChunkSpec's rule)."""
    ChunkSpec(chunker=chunker, size=size, overlap=overlap)


def to_chunks(doc: Document, rows: Iterable[Row]) -> list[Chunk]:
    """Turn rows in document order into Chunks with ids ``doc_id#0``, ``doc_id#1``, ..."""
    text = doc.text
    return [
        Chunk(
            chunk_id=f"{doc.doc_id}#{ordinal}",
            doc_id=doc.doc_id,
            ordinal=ordinal,
            start=row.start,
            end=row.end,
            text=text[row.start : row.end],
            header=row.header,
            n_tokens=row.n_tokens,
            parent_id=row.parent_id,
        )
        for ordinal, row in enumerate(rows)
    ]

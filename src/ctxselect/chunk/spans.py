"""Span helpers shared by the chunkers: trimming, size checks, and building Chunk values."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from ctxselect.config import ChunkSpec
from ctxselect.tokens.base import TokenCounter
from ctxselect.types import Chunk, Document

NONSPACE = re.compile(r"\S")
TINY_TOKENS = 4
"""A piece this small (a heading, one word, ``}``) joins a neighbour when they fit together."""


class Piece(NamedTuple):
    """A span ``text[start:end]`` and its token count."""

    start: int
    end: int
    n_tokens: int


class Span(Protocol):
    """A counted span of a text: what the chunkers' units have in common."""

    @property
    def start(self) -> int:
        """Offset of the span's first character."""

    @property
    def end(self) -> int:
        """Offset one past the span's last character."""

    @property
    def n_tokens(self) -> int:
        """Tokens of the span's text."""


def longest_run(
    counter: TokenCounter, size: int, text: str, units: Sequence[Span], i: int, stop: int
) -> tuple[int, int]:
    """Return the largest ``s <= stop`` whose run ``units[i:s]`` fits ``size``, and its tokens.

    The text between units costs tokens too, so a run is counted whole, not summed.
    Runs are tried from the longest down, 1, 1, 2, 4, ... units shorter, then bisected
    (a longer run of the same text has no fewer tokens): O(log n) counts per run where
    dropping one unit at a time and recounting was quadratic at large sizes.
    ``units[i]`` alone must fit.
    """
    start, fits, fits_n = units[i].start, i + 1, units[i].n_tokens
    too_long, misses, bisect = stop + 1, 0, False
    while too_long - fits > 1:  # units[i:fits] fits; units[i:too_long] does not
        if bisect:
            probe = (fits + too_long) // 2
        else:
            probe = max(too_long - (1 << max(misses - 1, 0)), fits + 1)
        n = counter.count(text[start : units[probe - 1].end])
        if n <= size:
            fits, fits_n, bisect = probe, n, True  # found from above: bisect the rest
        else:
            too_long, misses = probe, misses + 1
    return fits, fits_n


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

"""Span helpers shared by the chunkers: trimming, size checks, and building Chunk values."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from ctxselect.config import ChunkSpec
from ctxselect.front_matter import HIDDEN_CLASS
from ctxselect.tokens.base import TokenCounter
from ctxselect.tokens.counters import count_many
from ctxselect.types import Chunk, Document

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
    """Return ``(start, end)`` moved inwards past whitespace; equal values when blank.

    Blank means no visible character (:func:`has_text`): a span of zero-width spaces is
    blank too. Only whitespace is trimmed, so a zero-width space beside text stays in it.
    """
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if has_text(text, start, end) else (start, start)


INVISIBLE_CLASS = rf"\s\p{{Cc}}{HIDDEN_CLASS}"
"""What :func:`has_text` counts as no text, as the body of a ``regex`` character class."""


@functools.cache
def _visible() -> Any:
    # regex (a core dependency) knows Unicode properties; re does not
    import regex

    return regex.compile(f"[^{INVISIBLE_CLASS}]")


@functools.cache
def blank_line(line_break: str) -> Any:
    """Return a ``regex`` pattern of a blank line between two ``line_break`` matches.

    Blank means no visible character (:func:`has_text`), so a line holding only a
    zero-width space, a BOM or a word joiner separates paragraphs as an empty one does.
    Runs of blank lines are one match.
    """
    import regex  # Unicode properties, as in _visible

    return regex.compile(f"{line_break}[{INVISIBLE_CLASS}]*{line_break}")


def has_text(text: str, start: int, end: int) -> bool:
    """Return True when ``text[start:end]`` holds a visible character.

    Invisible are whitespace, controls (Unicode category Cc), format characters (Cf:
    U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+FEFF BOM, U+00AD SOFT HYPHEN, bidi
    marks) and the rest of Unicode's Default_Ignorable_Code_Point set (variation
    selectors, U+3164 HANGUL FILLER). No chunker makes a chunk without a visible character.
    """
    return start < end and _visible().search(text, start, end) is not None


def count_up_to(
    counter: TokenCounter, limit: int, text: str, spans: Sequence[tuple[int, int]]
) -> list[int]:
    """Return the tokens of each span ``text[a:b]``, or ``limit + 1`` for a span too long
    to be within ``limit`` (not counted, as the chunkers only cut such a span further).

    A token covers at most ``counter.max_token_chars`` characters (the bytes of its
    longest token), so a span longer than ``limit`` times that is above ``limit``.
    Counting every level of a deep syntax tree whole re-read a 1.25 MB minified file
    once per level; counters without the attribute are asked for every span.
    """
    longest = getattr(counter, "max_token_chars", 0)
    todo = [i for i, (a, b) in enumerate(spans) if longest <= 0 or b - a <= limit * longest]
    counts = [limit + 1] * len(spans)
    found = count_many(counter, [text[spans[i][0] : spans[i][1]] for i in todo])
    for i, n in zip(todo, found, strict=True):
        counts[i] = n
    return counts


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

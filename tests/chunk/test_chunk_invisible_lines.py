"""A line holding only invisible characters separates paragraphs, as a blank line does.

Invisible is what ``chunk.spans.has_text`` says: whitespace, controls, format characters
(U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+FEFF BOM...) and the other default
ignorable code points. Text pasted from web pages and chat apps often has such lines.
A zero-width space beside visible text on its line separates nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.chunk import make_chunker
from ctxselect.config import ChunkSpec
from ctxselect.types import Chunk, Document

INVISIBLE_LINES = ["\u200b", " \u2060\ufeff ", "\u00ad", "\u200e\u200b\t", "\u3164"]
# Three paragraphs of three lines each: cut on lines, a chunk would end mid-paragraph.
PARAGRAPHS = [
    "\n".join(f"Paragraph {p} line {i} says a few more words about it." for i in range(3))
    for p in range(3)
]


def chunk(chunker: str, text: str, size: int) -> list[Chunk]:
    kind = "markdown" if chunker == "markdown" else "text"
    chunks = make_chunker(ChunkSpec(chunker=chunker, size=size)).chunk(
        Document("d", text, kind=kind)
    )
    for c in chunks:
        assert text[c.start : c.end] == c.text
    return chunks


@pytest.mark.parametrize("line", INVISIBLE_LINES)
@pytest.mark.parametrize(
    ("chunker", "size"), [("paragraph", 300), ("tokens", 60), ("markdown", 60), ("auto", 60)]
)
def test_an_invisible_line_separates_paragraphs_as_a_blank_line(
    chunker: str, size: int, line: str
) -> None:
    blank = chunk(chunker, "\n\n".join(PARAGRAPHS), size)
    invisible = chunk(chunker, f"\n{line}\n".join(PARAGRAPHS), size)
    assert [c.text for c in blank] == PARAGRAPHS
    assert [c.text for c in invisible] == PARAGRAPHS  # no invisible line at a chunk's edge


@pytest.mark.parametrize("chunker", ["paragraph", "tokens"])
def test_a_zero_width_space_beside_text_separates_nothing(chunker: str) -> None:
    text = "Alpha line one.\n\u200bAlpha line two.\nAlpha line three\u200b\nAlpha four."
    assert [c.text for c in chunk(chunker, text, 300)] == [text]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["Alpha beta.", "Gamma delta epsilon.", "Zeta", ""]),
            st.text(st.sampled_from(" \t\u200b\u2060\ufeff\u00ad"), min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 60),
)
def test_paragraphs_are_the_same_whether_a_line_is_empty_or_invisible(
    lines: list[str], size: int
) -> None:
    # every invisible character replaced by a space: same offsets, so the same spans
    text = "\n".join(["First.", *lines, "Last."])
    spaced = text.translate({ord(ch): " " for ch in "\u200b\u2060\ufeff\u00ad"})
    chunker = make_chunker(ChunkSpec("paragraph", size, tokenizer="chars4"))
    spans = [[(c.start, c.end) for c in chunker.chunk(Document("d", t))] for t in (text, spaced)]
    assert spans[0] == spans[1]

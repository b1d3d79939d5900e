"""No chunk is made of invisible characters only (zero-width spaces, BOMs, soft hyphens...).

The rule (``chunk.spans.has_text``): a character is invisible when it is whitespace, a
control (Cc), a format character (Cf: U+200B, U+2060, U+FEFF, U+00AD, bidi marks...) or
another Default_Ignorable_Code_Point (variation selectors, U+3164 HANGUL FILLER). Pieces
without a visible character are dropped; chunks are still trimmed of whitespace only, so a
zero-width space next to visible text stays in its chunk and offsets stay exact.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.chunk import MarkdownChunker, ParagraphChunker, TokenChunker, make_chunker
from ctxselect.chunk.spans import has_text, trim
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")
INVISIBLE = "\u200b\u2060\ufeff\u00ad\u200e\u200d\u034f\ufe0f\u3164\u180e"
SEPARATORS = [" ", "\n", "\n\n", "\t", "\r\n\r\n", "\r\r"]
PROSE = "Alpha beta gamma delta. " * 6


def visible(text: str) -> bool:
    """An independent statement of the rule, through unicodedata."""
    return any(
        not ch.isspace()
        and unicodedata.category(ch) not in ("Cc", "Cf")
        and ch not in "\u034f\ufe0f\u3164"  # default-ignorable, not Cf
        for ch in text
    )


def check(doc: Document, chunks: list[Chunk]) -> None:
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert visible(c.text), f"invisible-only chunk {c.text!r}"


@pytest.mark.parametrize("ch", list(INVISIBLE))
def test_the_rule_counts_each_invisible_character_as_no_text(ch: str) -> None:
    assert not has_text(f" {ch}{ch}\n", 0, 4)
    assert has_text(f"{ch}a{ch}", 0, 3)
    assert trim(f" {ch}\n", 0, 3) == (1, 1)  # blank: equal values
    assert trim(f" {ch}a\n", 0, 4) == (1, 3)  # whitespace only is trimmed


def test_combining_marks_and_private_use_characters_are_visible() -> None:
    assert has_text("\u0301", 0, 1) and has_text("\ue000", 0, 1)


SPECS = [
    ChunkSpec("tokens", 8),
    ChunkSpec("paragraph", 30),
    ChunkSpec("markdown", 8),
    ChunkSpec("rst", 8),
    ChunkSpec("pdf", 8),
    ChunkSpec("auto", 8),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.chunker)
@pytest.mark.parametrize(
    "text",
    [
        "\u200b",
        "\ufeff\u2060\n\n\u00ad",
        f"{PROSE}\n\n\u200b\u2060\n\n{PROSE}",
        f"\u200b\n\n# Title\n\n{PROSE}",
        f"# A\n\n{PROSE}\n\n\ufeff\n\n# B\n\n\u00ad",
        f"{PROSE}\f\u200b\f{PROSE}",
    ],
)
def test_no_chunker_emits_an_invisible_only_chunk(spec: ChunkSpec, text: str) -> None:
    doc = Document("d.md", text, kind="markdown")
    chunks = make_chunker(spec).chunk(doc)
    check(doc, chunks)
    if not visible(text):
        assert chunks == []


def test_a_zero_width_space_beside_text_stays_in_its_chunk() -> None:
    text = "\u200bHello there.\n\nNext paragraph.\u200b"
    chunks = ParagraphChunker(10, 0, CL100K).chunk(Document("d", text))
    assert [c.text for c in chunks] == ["\u200bHello there.", "Next paragraph.\u200b"]


def test_code_chunker_drops_an_invisible_only_file_and_keeps_text_beside_one() -> None:
    pytest.importorskip("tree_sitter", reason="the code extra: pip install 'ctxselect[code]'")
    chunker = make_chunker(ChunkSpec("code", 16))
    assert chunker.chunk(Document("z.py", "\u200b\ufeff\n", kind="code")) == []
    doc = Document("z.py", "\u200bx = 1\n\n\ufeff\n\ndef f():\n    return 1\n", kind="code")
    check(doc, chunker.chunk(doc))


pieces = st.lists(
    st.tuples(
        st.one_of(
            st.text(INVISIBLE, min_size=1, max_size=3),
            st.sampled_from(["word", "x" * 30, "é", "Hé llo"]),
        ),
        st.sampled_from(SEPARATORS),
    ),
    max_size=30,
).map(lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=pieces, size=st.integers(4, 40), data=st.data())
def test_generated_text_never_gives_an_invisible_only_chunk(text, size, data) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document("g.md", text, kind="markdown")
    for chunker in (
        TokenChunker(size, overlap, CL100K),
        MarkdownChunker(size, overlap, CL100K),
        ParagraphChunker(size, 0, CL100K),
    ):
        chunks = chunker.chunk(doc)
        check(doc, chunks)
        covered = set().union(*(range(c.start, c.end) for c in chunks))
        lost = "".join(ch for i, ch in enumerate(text) if i not in covered)
        assert not visible(lost)  # only invisible characters are left out

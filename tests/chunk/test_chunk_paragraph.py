"""The paragraph chunker follows the chapter's rule exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.chunk import ParagraphChunker
from ctxselect.errors import ConfigError
from ctxselect.ingest.text import normalize
from ctxselect.tokens import get_counter
from ctxselect.types import Document

DELTA = "Delta is a paragraph much longer than the size allows."
TEXT = f"  Alpha one.\n\nBeta two two.\n   \nGamma.\n\n\n{DELTA}\n\nEps.\n"


def spans(size: int, text: str = TEXT) -> list[str]:
    doc = Document("doc", text, title="The title")
    chunks = ParagraphChunker(size, 0, get_counter("chars4")).chunk(doc)
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.header == "The title"
        assert c.n_tokens == -(-len(c.text) // 4)
    return [c.text for c in chunks]


def test_paragraphs_pack_until_the_next_would_pass_the_size() -> None:
    # "Alpha one.\n\nBeta two two." spans 25 characters; adding Gamma would make 36 > 30.
    assert spans(30) == [
        "Alpha one.\n\nBeta two two.",
        "Gamma.",  # Delta would take this chunk past 30: close it
        DELTA,  # one paragraph longer than the size: one oversized chunk
        "Eps.",
    ]


def test_a_chunk_may_reach_the_size_exactly() -> None:
    assert len("Alpha one.\n\nBeta two two.\n   \nGamma.") == 36
    assert spans(36)[0] == "Alpha one.\n\nBeta two two.\n   \nGamma."  # blank lines kept
    assert spans(35)[0] == "Alpha one.\n\nBeta two two."


def test_offsets_point_at_the_trimmed_paragraph_span() -> None:
    doc = Document("doc", TEXT)
    first = ParagraphChunker(30, 0, get_counter("chars4")).chunk(doc)[0]
    assert (first.start, first.end) == (2, 27)
    assert [c.chunk_id for c in ParagraphChunker(30).chunk(doc)] == [f"doc#{i}" for i in range(4)]


def test_a_large_size_keeps_the_whole_document_in_one_chunk() -> None:
    assert spans(10_000) == [TEXT.strip()]


def test_single_newlines_do_not_separate_paragraphs() -> None:
    text = "line one\nline two\nline three"
    assert spans(5, text) == [text]


def test_overlap_is_refused() -> None:
    with pytest.raises(ConfigError, match="overlap"):
        ParagraphChunker(100, 10)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_lone_cr_breaks_lines_as_lf_and_crlf_do(newline: str) -> None:
    # API text is not normalised: the same paragraphs whatever the line ends, offsets exact
    text = TEXT.replace("\n", newline)
    assert spans(30, text) == [s.replace("\n", newline) for s in spans(30)]


@pytest.mark.parametrize("text", ["one\r\ntwo", "one\rtwo", "one\ntwo"])
def test_one_line_break_is_not_a_blank_line(text: str) -> None:
    assert spans(3, text) == [text]


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(["a", "b", " ", "\t", "\n", "\r", "\u200b"]), max_size=40))
def test_paragraphs_are_those_of_the_text_ingest_would_store(text: str) -> None:
    # size 1: each paragraph is a chunk of its own; ingest turns CRLF and CR into LF
    raw = ParagraphChunker(1, 0, get_counter("chars4")).chunk(Document("r", text))
    stored = ParagraphChunker(1, 0, get_counter("chars4")).chunk(Document("n", normalize(text)))
    assert [normalize(c.text) for c in raw] == [c.text for c in stored]
    assert all(text[c.start : c.end] == c.text for c in raw)


def test_an_invisible_only_paragraph_is_in_no_chunk() -> None:
    text = "Alpha one.\n\n\u200b\u2060\n\n\ufeff\n\nBeta two."
    assert spans(5, text) == ["Alpha one.", "Beta two."]
    assert spans(5, "\u200b\n\n\u00ad") == []


def test_the_layout_names_the_new_rule() -> None:
    assert ParagraphChunker(100).layout == "3"

"""Invariants every chunker keeps, checked on generated text (hypothesis)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.chunk import MarkdownChunker, ParagraphChunker, TokenChunker
from ctxselect.chunk.spans import has_text
from ctxselect.errors import ConfigError
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")
# the paragraph rule's blank line: CRLF, LF or a lone CR, whitespace, another break
BLANK_LINE = re.compile(r"(?>\r\n|\r|\n)\s*(?>\r\n|\r|\n)")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

words = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Cc")), max_size=12),
    st.sampled_from(["the", "token", "naïve", "日本語", "🙂", "x" * 60, "1234567890" * 5]),
)
separators = st.sampled_from(
    [" ", "  ", "\n", "\n\n", "\n \n\t", "\t", ". ", "! ", "\n\n\n", "   "]
)


@st.composite
def prose(draw: st.DrawFn) -> str:
    """Words and whitespace of every kind, long unbroken words included."""
    parts = draw(st.lists(st.tuples(words, separators), max_size=40))
    lead = draw(st.sampled_from(["", " ", "\n\n"]))
    return lead + "".join(w + s for w, s in parts)


any_text = st.one_of(prose(), st.text(max_size=300))
# Short words (<= 4 tokens) and single separators: no cut ever falls inside a word, so a
# suffix of every chunk fits in an overlap >= 4. (Cuts inside a word can let BPE merge
# across the cut; the exact check then drops the overlap rather than pass the size.)
letter_prose = st.lists(
    st.tuples(
        st.text("abcdefghijklmnop", min_size=1, max_size=4),
        st.sampled_from([" ", "\n", "\n\n", ". "]),
    ),
    max_size=40,
).map(lambda parts: "".join(w + s for w, s in parts))


@st.composite
def markdown(draw: st.DrawFn) -> str:
    """Markdown with random headings, fenced code with '#' lines, and paragraphs."""
    blocks = []
    for kind in draw(st.lists(st.sampled_from(["h", "p", "code", "setext", "list"]), max_size=14)):
        if kind == "h":
            blocks.append("#" * draw(st.integers(1, 6)) + " " + draw(words).strip())
        elif kind == "code":
            blocks.append("```\n# not a heading\n" + draw(prose()) + "\n```")
        elif kind == "setext":
            blocks.append(draw(words).strip() + "\n" + draw(st.sampled_from(["===", "---"])))
        elif kind == "list":
            blocks.append("- # heading in a list\n- item " + draw(words))
        else:
            blocks.append(draw(prose()))
    return draw(st.sampled_from(["\n\n", "\n"])).join(blocks)


def check_chunks(doc: Document, chunks: list[Chunk]) -> None:
    """Assert offsets, ids, order, trimming, and that no text is lost."""
    covered = [False] * len(doc.text)
    for ordinal, c in enumerate(chunks):
        assert c.ordinal == ordinal
        assert c.chunk_id == f"{doc.doc_id}#{ordinal}"
        assert c.doc_id == doc.doc_id
        assert doc.text[c.start : c.end] == c.text
        assert c.text.strip() == c.text != ""
        for i in range(c.start, c.end):
            covered[i] = True
    # only whitespace and invisible characters (zero-width spaces...) are left out
    assert all(covered[i] or not has_text(ch, 0, 1) for i, ch in enumerate(doc.text))
    assert all(has_text(c.text, 0, len(c.text)) for c in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    if not has_text(doc.text, 0, len(doc.text)):
        assert chunks == []


def check_limit(chunks: list[Chunk], size: int) -> None:
    """Assert the hard limit and that n_tokens is the exact count of the text."""
    for c in chunks:
        assert c.n_tokens == CL100K.count(c.text)
        assert c.n_tokens <= size


def chunk_or_explain(chunker: TokenChunker | MarkdownChunker, doc: Document) -> list[Chunk]:
    """Chunk, accepting ConfigError only when one character is above the size."""
    try:
        return chunker.chunk(doc)
    except ConfigError as exc:
        assert "too small" in str(exc)
        assert any(CL100K.count(ch) > chunker.size for ch in doc.text)
        return []


@SETTINGS
@given(text=any_text, size=st.integers(1, 8), data=st.data())
def test_tokens_chunker_small_sizes(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document("d", text, title="T")
    chunks = chunk_or_explain(TokenChunker(size, overlap, CL100K), doc)
    if chunks or not any(CL100K.count(ch) > size for ch in text):
        check_chunks(doc, chunks)
    check_limit(chunks, size)
    assert all(c.header == "T" and c.parent_id == "" for c in chunks)


@SETTINGS
@given(text=any_text, size=st.sampled_from([12, 32, 100]), overlap_share=st.floats(0, 0.9))
def test_tokens_chunker_larger_sizes(text: str, size: int, overlap_share: float) -> None:
    overlap = int(size * overlap_share)
    doc = Document("d", text)
    chunks = TokenChunker(size, overlap, CL100K).chunk(doc)
    check_chunks(doc, chunks)
    check_limit(chunks, size)
    ends = [c.end for c in chunks]
    assert ends == sorted(set(ends))  # every chunk brings new text
    if overlap == 0:
        assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))


@SETTINGS
@given(text=letter_prose, size=st.integers(8, 40), data=st.data())
def test_tokens_chunker_overlap_repeats_text(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(4, size // 2))
    doc = Document("d", text)
    chunks = TokenChunker(size, overlap, CL100K).chunk(doc)
    check_chunks(doc, chunks)
    check_limit(chunks, size)
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.start < nxt.start < prev.end < nxt.end
        assert CL100K.count(doc.text[nxt.start : prev.end]) <= overlap


@SETTINGS
@given(text=st.one_of(markdown(), any_text), size=st.integers(1, 8), data=st.data())
def test_markdown_chunker_small_sizes(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document("m", text, title="Title", kind="markdown")
    chunks = chunk_or_explain(MarkdownChunker(size, overlap, CL100K), doc)
    if chunks or not any(CL100K.count(ch) > size for ch in text):
        check_chunks(doc, chunks)
    check_limit(chunks, size)


@SETTINGS
@given(text=markdown(), size=st.sampled_from([16, 40, 120, 400]))
def test_markdown_chunker_structure(text: str, size: int) -> None:
    doc = Document("m", text, title="Title", kind="markdown")
    chunks = MarkdownChunker(size, 0, CL100K).chunk(doc)
    check_chunks(doc, chunks)
    check_limit(chunks, size)
    assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))
    for c in chunks:
        assert c.header.startswith("Title")
        span = c.parent_id.removeprefix("m@")
        start, end = (int(x) for x in span.split(":"))
        assert start <= c.start and c.end <= end <= len(text)


@SETTINGS
@given(text=any_text, size=st.integers(1, 400))
def test_paragraph_chunker_keeps_paragraphs_whole(text: str, size: int) -> None:
    doc = Document("p", text, title="P")
    chunks = ParagraphChunker(size, 0, CL100K).chunk(doc)
    check_chunks(doc, chunks)
    assert all(c.n_tokens == CL100K.count(c.text) and c.header == "P" for c in chunks)
    for c in chunks:  # within size, or one paragraph that alone is larger
        assert len(c.text) <= size or not BLANK_LINE.search(c.text)
    for prev, nxt in itertools.pairwise(chunks):
        assert BLANK_LINE.search(doc.text, prev.end - 1, nxt.start + 1)
        blank = BLANK_LINE.search(nxt.text)
        first_end = nxt.start + len(nxt.text[: blank.start() if blank else None].rstrip())
        assert first_end - prev.start > size  # closed because the next paragraph did not fit


@pytest.mark.parametrize("chunker", [TokenChunker, MarkdownChunker, ParagraphChunker])
@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \n"])
def test_blank_documents_give_no_chunks(chunker: type, text: str) -> None:
    assert chunker(8, 0, CL100K).chunk(Document("b", text, kind="markdown")) == []

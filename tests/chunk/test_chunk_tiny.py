"""A tiny opening piece (a heading, one word) joins the next one whenever they fit."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.chunk import ParagraphChunker, make_chunker
from ctxselect.chunk.spans import TINY_TOKENS
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

SIZE = 64
OPENERS = ("Intro", "**Intro**", "# Intro", "Intro\n=====", "1.")
SUFFIX = {"markdown": ".md", "rst": ".rst", "pdf": ".pdf", "code": ".py"}
KIND = {"markdown": "markdown", "rst": "rst", "pdf": "pdf", "code": "code"}


def paragraph(tokenizer: str, n: int) -> str:
    """Words ``alpha0 alpha1 ...`` of at most ``n`` tokens, as many as fit."""
    count, words = get_counter(tokenizer).count, []
    while count(" ".join([*words, f"alpha{len(words)}"])) <= n:
        words.append(f"alpha{len(words)}")
    return " ".join(words)


def cut(chunker: str, tokenizer: str, text: str) -> list[Chunk]:
    doc = Document(f"d{SUFFIX.get(chunker, '.txt')}", text, kind=KIND.get(chunker, "text"))
    chunks = make_chunker(ChunkSpec(chunker=chunker, size=SIZE, tokenizer=tokenizer)).chunk(doc)
    for c in chunks:  # the invariants the join must never break
        assert text[c.start : c.end] == c.text and 0 < c.n_tokens <= SIZE
        assert c.n_tokens == get_counter(tokenizer).count(c.text)
    return chunks


@pytest.mark.parametrize("chunker", ["tokens", "markdown", "rst", "pdf", "auto"])
def test_a_one_word_opener_joins_a_paragraph_it_fits_with(chunker):
    # chars4 counts "**Intro**" as 3 and "\n\n" + the paragraph as 62: 65 apart, 64 whole
    body = paragraph("chars4", SIZE - 2)
    text = f"**Intro**\n\n{body}\n\nTail paragraph here."
    chunks = cut(chunker, "chars4", text)
    assert chunks[0].text == f"**Intro**\n\n{body}"
    assert [c.text for c in chunks[1:]] == ["Tail paragraph here."]


@pytest.mark.parametrize("chunker", ["markdown", "rst"])
def test_a_one_word_preamble_joins_the_first_section(chunker):
    heading = "# Heading" if chunker == "markdown" else "Heading\n======="
    text = f"Intro\n\n{heading}\n\n{paragraph('cl100k', 48)}"
    (only,) = cut(chunker, "cl100k", text)
    assert (only.start, only.end, only.header) == (0, len(text), "Heading")
    assert only.parent_id == f"d{SUFFIX[chunker]}@0:{len(text)}"  # the document holds both


def test_a_heading_and_one_word_join_the_next_section():
    text = f"# Title\n\nIntro\n\n## Heading\n\n{paragraph('cl100k', 48)}"
    (only,) = cut("markdown", "cl100k", text)
    assert only.text == text and only.header == "Title > Heading"
    assert only.parent_id == f"d.md@0:{len(text)}"


@pytest.mark.parametrize("chunker", ["tokens", "markdown", "rst", "pdf", "code", "auto"])
@pytest.mark.parametrize("tokenizer", ["cl100k", "chars4"])
def test_a_tiny_opener_stays_alone_only_when_it_cannot_fit(chunker, tokenizer):
    count = get_counter(tokenizer).count
    for opener in OPENERS:
        for short in range(6):  # the second paragraph at the limit, then a little under
            body = paragraph(tokenizer, SIZE - short)
            for tail in ("", "\n\nTail paragraph here."):
                text = f"{opener}\n\n{body}{tail}"
                chunks = cut(chunker, tokenizer, text)
                first, after = chunks[0], chunks[1:2]
                if first.n_tokens <= TINY_TOKENS and after:
                    joined = count(text[first.start : after[0].end])
                    assert joined > SIZE, (opener, short, tail, [c.text for c in chunks])


def test_the_markdown_heading_above_a_full_paragraph_stays_alone():
    body = paragraph("cl100k", SIZE - 2)  # "# Title\n\n" + body is 65 tokens: no room
    chunks = cut("markdown", "cl100k", f"# Title\n\n{body}")
    assert [c.text for c in chunks] == ["# Title", body]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(
        st.sampled_from(["a", "**b**", "Intro", "x" * 9, "alpha beta", "#"]), max_size=60
    ),
    seps=st.lists(st.sampled_from([" ", "\n", "\n\n", ". "]), min_size=60, max_size=60),
    tokenizer=st.sampled_from(["cl100k", "chars4"]),
)
def test_no_tiny_tokens_chunk_fits_with_the_next(words, seps, tokenizer):
    text = "".join(w + s for w, s in zip(words, seps, strict=False))
    chunks = cut("tokens", tokenizer, text)
    count = get_counter(tokenizer).count
    for c, after in itertools.pairwise(chunks):
        if c.n_tokens <= TINY_TOKENS:
            assert count(text[c.start : after.end]) > SIZE


def test_a_tiny_heading_stays_out_of_a_cut_section_so_it_can_be_promoted():
    # "# Guide" fits with the first piece of Reset, but that chunk would straddle Reset,
    # and parent promotion never replaces a chunk straddling its section
    body = "\n\n".join(paragraph("cl100k", 40) for _ in range(3))
    text = f"# Guide\n\n## Reset\n\n{body}"
    chunks = cut("markdown", "cl100k", text)
    reset = f"d.md@{text.index('## Reset')}:{len(text)}"
    assert chunks[0].text == "# Guide" and len(chunks) > 2
    assert {c.parent_id for c in chunks[1:]} == {reset}
    assert get_counter("cl100k").count(text[: chunks[1].end]) <= SIZE  # it would have fit


def paragraph_chunks(text: str, size: int, tokenizer: str = "cl100k") -> list[Chunk]:
    chunks = ParagraphChunker(size, 0, get_counter(tokenizer)).chunk(Document("d.txt", text))
    assert all(text[c.start : c.end] == c.text for c in chunks)
    return chunks


@pytest.mark.parametrize("opener", OPENERS)
def test_a_paragraph_opener_joins_the_next_paragraph_whenever_both_fit_the_characters(opener):
    # paragraph's limit is characters, and it measures the joined span exactly: a tiny
    # opener shares a chunk whenever "opener\n\nbody" fits the size, and only then
    body = "word " * 30 + "end."
    text = f"{opener}\n\n{body}\n\nTail paragraph here."
    joined = len(f"{opener}\n\n{body}")
    fits = paragraph_chunks(text, joined)
    assert fits[0].text == f"{opener}\n\n{body}"
    alone = paragraph_chunks(text, joined - 1)
    assert [c.text for c in alone[:2]] == [opener, body]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(
        st.sampled_from(["a", "**b**", "Intro", "x" * 9, "alpha beta", "#", "# Title"]),
        max_size=60,
    ),
    seps=st.lists(st.sampled_from([" ", "\n", "\n\n", "\n \n", ". "]), min_size=60, max_size=60),
    size=st.integers(5, 120),
    tokenizer=st.sampled_from(["cl100k", "chars4"]),
)
def test_no_tiny_paragraph_chunk_fits_with_the_next_in_characters(words, seps, size, tokenizer):
    text = "".join(w + s for w, s in zip(words, seps, strict=False))
    chunks = paragraph_chunks(text, size, tokenizer)
    for c, after in itertools.pairwise(chunks):
        if c.n_tokens <= TINY_TOKENS:
            assert after.end - c.start > size, (c.text, after.text)

"""make_chunker, the registry, "auto" dispatch and ChunkSpec validation."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ctxselect.chunk import (
    CHUNKERS,
    AutoChunker,
    Chunker,
    MarkdownChunker,
    ParagraphChunker,
    TokenChunker,
    make_chunker,
)
from ctxselect.config import ChunkSpec
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.types import Document

MARKDOWN = "# Title\n\nBody.\n\n## Part\n\n" + "Words in the part. " * 60


def test_every_chunker_is_registered_under_its_name() -> None:
    assert CHUNKERS.names() == ["auto", "code", "markdown", "paragraph", "pdf", "rst", "tokens"]
    for name in CHUNKERS.names():
        chunker = make_chunker(ChunkSpec(chunker=name, size=64))
        assert isinstance(chunker, Chunker)
        assert chunker.name == name


def test_make_chunker_passes_size_overlap_and_tokenizer() -> None:
    chunker = make_chunker(ChunkSpec(chunker="tokens", size=100, overlap=10, tokenizer="chars4"))
    assert isinstance(chunker, TokenChunker)
    assert (chunker.size, chunker.overlap, chunker.counter.name) == (100, 10, "chars4")
    chunks = chunker.chunk(Document("d", "word " * 200))
    assert all(c.n_tokens == -(-len(c.text) // 4) <= 100 for c in chunks)
    assert isinstance(make_chunker(ChunkSpec("paragraph", 900)), ParagraphChunker)
    assert isinstance(make_chunker(ChunkSpec("markdown", 900)), MarkdownChunker)


def test_auto_uses_markdown_for_markdown_documents_and_tokens_otherwise() -> None:
    auto = make_chunker(ChunkSpec(size=60, overlap=5))
    assert isinstance(auto, AutoChunker)
    as_markdown = auto.chunk(Document("a.md", MARKDOWN, title="T", kind="markdown"))
    as_text = auto.chunk(Document("a.txt", MARKDOWN, title="T", kind="text"))
    assert as_markdown == MarkdownChunker(60, 5, auto.counter).chunk(
        Document("a.md", MARKDOWN, title="T", kind="markdown")
    )
    assert as_text == TokenChunker(60, 5, auto.counter).chunk(
        Document("a.txt", MARKDOWN, title="T")
    )
    assert {c.header for c in as_markdown} == {"T > Title", "T > Title > Part"}
    assert all(c.parent_id for c in as_markdown)
    assert {c.header for c in as_text} == {"T"} and not any(c.parent_id for c in as_text)


def test_unknown_chunker_lists_the_valid_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        make_chunker(ChunkSpec(chunker="sentences"))
    message = str(info.value)
    assert "'sentences'" in message
    assert all(name in message for name in CHUNKERS.names())


def test_unknown_tokenizer_lists_the_valid_tokenizers() -> None:
    with pytest.raises(UnknownNameError, match="cl100k"):
        make_chunker(ChunkSpec(chunker="tokens", tokenizer="gpt2"))


@pytest.mark.parametrize(
    ("size", "overlap", "match"),
    [
        (0, 0, "size must be a whole number from 1"),
        (-5, 0, "size"),
        (8, 8, "overlap"),
        (8, -1, "overlap"),
    ],
)
def test_chunk_spec_rejects_bad_size_and_overlap(size: int, overlap: int, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ChunkSpec(size=size, overlap=overlap)


def test_paragraph_chunker_refuses_overlap_through_the_factory() -> None:
    with pytest.raises(ConfigError, match="paragraph chunker never overlaps"):
        make_chunker(ChunkSpec(chunker="paragraph", size=400, overlap=40))


def test_importing_the_chunk_stage_loads_no_tokenizer_or_parser() -> None:
    code = (
        "import sys, ctxselect.chunk; "
        "print(sorted(m for m in ('tiktoken', 'markdown_it') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("chunker", "overlap", "layout"),
    [
        ("tokens", 0, "5"),  # 4: cuts inside a word keep grapheme clusters whole
        ("tokens", 8, "5"),  # 5: invisible-only lines separate; overlaps keep clusters
        ("rst", 0, "5"),
        ("pdf", 8, "5"),
        ("code", 0, "5"),
        ("markdown", 0, "front-matter-5"),  # 5: table heads in headers, and tokens' 5
        ("paragraph", 0, "3"),  # 3: a line of invisible characters separates paragraphs
    ],
)
def test_a_chunker_that_cuts_differently_names_a_new_layout(chunker, overlap, layout) -> None:
    assert make_chunker(ChunkSpec(chunker=chunker, size=64, overlap=overlap)).layout == layout
    assert make_chunker(ChunkSpec(size=64)).layout.startswith("7")

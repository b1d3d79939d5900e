"""The tokens chunker: hard limit, greedy packing, overlap, and real-corpus speed."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from ctxselect.chunk import RecursiveSplitter, TokenChunker
from ctxselect.errors import ConfigError
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")


def chunk(text: str, size: int, overlap: int = 0, title: str = "") -> list[Chunk]:
    chunks = TokenChunker(size, overlap, CL100K).chunk(Document("d", text, title=title))
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.n_tokens == CL100K.count(c.text) <= size
    return chunks


def test_a_document_that_fits_is_one_trimmed_chunk_with_the_title_as_header() -> None:
    (only,) = chunk("\n  Hello world.\n\n", 8, title="Greeting")
    assert (only.start, only.end, only.text) == (3, 15, "Hello world.")
    assert (only.chunk_id, only.header, only.n_tokens, only.parent_id) == ("d#0", "Greeting", 3, "")


def test_paragraphs_are_preferred_boundaries_and_pieces_are_packed() -> None:
    paragraphs = [f"Paragraph {i} has a few words." for i in range(6)]  # 7 tokens each
    text = "\n\n".join(paragraphs)
    chunks = chunk(text, 20)
    assert [c.text for c in chunks] == [
        "\n\n".join(paragraphs[0:2]),
        "\n\n".join(paragraphs[2:4]),
        "\n\n".join(paragraphs[4:6]),
    ]


def test_sentences_then_words_then_characters() -> None:
    sentences = "One two three. Four five six. Seven eight nine."
    assert [c.text for c in chunk(sentences, 5)] == [
        "One two three.",
        "Four five six.",
        "Seven eight nine.",
    ]
    assert [c.text for c in chunk("alpha beta gamma delta", 2)] == ["alpha beta", "gamma delta"]
    unbroken = "x" * 5000  # no separator at all: cut by characters
    pieces = chunk(unbroken, 16)
    assert "".join(c.text for c in pieces) == unbroken
    assert max(c.n_tokens for c in pieces) == 16


@pytest.mark.parametrize("size", [1, 3, 64, 512])
def test_pathological_inputs_never_pass_the_size(size: int) -> None:
    rng = random.Random(size)
    minified = "".join(rng.choice("abcXYZ019(){};=+,.<>/'\"") for _ in range(20_000))
    for text in (minified, "a" * 30_000, " ".join(["supercalifragilistic"] * 2000), "日本" * 1500):
        chunks = chunk(text, size, overlap=size // 3)
        assert chunks[0].start == 0 and chunks[-1].end == len(text.rstrip())


def test_overlap_repeats_the_end_of_the_previous_chunk() -> None:
    text = " ".join(f"w{i}" for i in range(60))
    chunks = chunk(text, 20, overlap=6)
    assert len(chunks) > 3
    for prev, nxt in itertools.pairwise(chunks):
        repeated = text[nxt.start : prev.end]
        assert repeated and prev.text.endswith(repeated) and nxt.text.startswith(repeated)
        assert CL100K.count(repeated) <= 6
    without = chunk(text, 20)
    assert all(a.end < b.start for a, b in itertools.pairwise(without))
    assert len(without) < len(chunks)


def test_a_size_below_one_character_is_a_config_error() -> None:
    assert CL100K.count("🙂") > 1
    with pytest.raises(ConfigError, match=r"too small.*U\+1F642"):
        chunk("ab 🙂 cd", 1)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_invalid_size_or_overlap(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        RecursiveSplitter(CL100K, size, overlap)


@pytest.mark.data
def test_scifact_at_512_tokens_keeps_every_invariant(scifact_dir: Path) -> None:
    with (scifact_dir / "corpus.jsonl").open(encoding="utf-8") as f:
        docs = [Document(r["_id"], r["text"], title=r["title"]) for r in map(json.loads, f)]
    chunker = TokenChunker(512, 0, CL100K)
    chunks = [chunker.chunk(doc) for doc in docs]
    for doc, doc_chunks in zip(docs, chunks, strict=True):
        assert doc_chunks, doc.doc_id
        for i, c in enumerate(doc_chunks):
            assert c.chunk_id == f"{doc.doc_id}#{i}" and doc.text[c.start : c.end] == c.text
            assert c.n_tokens <= 512 and c.header == doc.title
    assert sum(map(len, chunks)) > len(docs)  # the long abstracts were cut


@pytest.mark.parametrize(("size", "overlap"), [(40, 8), (30, 8), (64, 16)])
def test_the_overlap_never_repeats_more_tokens_than_asked(size: int, overlap: int) -> None:
    # atoms counted apart ("why." and " ") can sum below their joined text ("why. "...)
    text = ("Each hit shows the ranked chunks it left out and why. " * 3 + "\n\n") * 3
    text += "indexing `./handbook` that contains `setup/linux.md` yields the id. " * 4
    chunks = chunk(text, size, overlap)
    shared = [text[b.start : a.end] for a, b in itertools.pairwise(chunks)]
    assert all(s for s in shared)  # some text is repeated between every two pieces
    assert max(CL100K.count(s) for s in shared) <= overlap

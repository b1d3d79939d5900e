"""A cut inside a word never splits a user-perceived character (a grapheme cluster).

Text without spaces (CJK, emoji runs, minified code, accented words written with
combining marks) is cut at characters. Cutting between ``e`` and U+0301 COMBINING ACUTE
ACCENT, or inside an emoji ZWJ sequence, leaves one chunk with a bare letter and the next
opening with a mark that has nothing to sit on. Only a single cluster above ``size`` may
still be cut inside, by code points, so the hard limit holds.
"""

from __future__ import annotations

import itertools

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.chunk import make_chunker
from ctxselect.chunk.code import available
from ctxselect.chunk.recursive import grapheme_floor
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

GRAPHEME = regex.compile(r"\X")
FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # one cluster, 7 code points
COMBINING = "e\u0301a\u0300o\u0308"  # "éàö" as base letters and combining marks
KIND = {"markdown": ("d.md", "markdown"), "code": ("d.py", "code")}


def boundaries(text: str) -> set[int]:
    """Every offset where a grapheme cluster starts or ends."""
    return {0} | {m.end() for m in GRAPHEME.finditer(text)}


def cut(chunker: str, text: str, size: int, tokenizer: str = "cl100k") -> list[Chunk]:
    doc_id, kind = KIND.get(chunker, ("d.txt", "text"))
    spec = ChunkSpec(chunker=chunker, size=size, tokenizer=tokenizer)
    chunks = make_chunker(spec).chunk(Document(doc_id, text, kind=kind))
    count = get_counter(tokenizer).count
    for c in chunks:
        assert text[c.start : c.end] == c.text and 0 < c.n_tokens == count(c.text) <= size
    return chunks


def split_clusters(text: str, chunks: list[Chunk]) -> list[int]:
    """The chunk edges that fall inside a grapheme cluster."""
    edges = boundaries(text)
    return [e for c in chunks for e in (c.start, c.end) if e not in edges]


CHUNKERS = [
    "tokens",
    "markdown",
    "auto",
    pytest.param(
        "code", marks=pytest.mark.skipif(not available(), reason="the code extra is not installed")
    ),
]


@pytest.mark.parametrize("chunker", CHUNKERS)
@pytest.mark.parametrize("size", [16, 64])
def test_combining_marks_stay_on_their_letter(chunker, size):
    text = COMBINING * 300
    if chunker == "code":
        text = f"x = '{text}'\n"  # a string literal above the size: a leaf the splitter cuts
    chunks = cut(chunker, text, size)
    assert len(chunks) > 3
    assert split_clusters(text, chunks) == []


@pytest.mark.parametrize("chunker", ["tokens", "markdown"])
def test_an_emoji_zwj_sequence_is_never_cut_when_it_fits(chunker):
    text = FAMILY * 200
    chunks = cut(chunker, text, 64)
    assert split_clusters(text, chunks) == []
    assert all(c.text.startswith(FAMILY) for c in chunks)


def test_a_cluster_above_the_size_is_still_cut_under_the_limit():
    # "a" with 200 combining marks is one cluster of far more than 8 tokens
    text = "a" + "\u0301" * 200 + " tail words here"
    chunks = cut("tokens", text, 8)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clusters=st.lists(
        st.sampled_from(["e\u0301", "a", "\u6f22", FAMILY, "\U0001f44d\U0001f3fd", "n\u0303"]),
        min_size=1,
        max_size=200,
    ),
    size=st.integers(20, 80),
    tokenizer=st.sampled_from(["cl100k", "chars4"]),
)
def test_no_chunk_edge_falls_inside_a_cluster_that_fits(clusters, size, tokenizer):
    text = "".join(clusters)
    chunks = cut("tokens", text, size, tokenizer)
    assert split_clusters(text, chunks) == []
    for c, after in itertools.pairwise(chunks):
        assert c.end == after.start  # no separators: nothing between chunks is lost


@settings(max_examples=80, deadline=None)
@given(
    clusters=st.lists(
        st.sampled_from(
            [
                "e\u0301",
                "a",
                FAMILY,
                "\U0001f1eb\U0001f1f7",
                "\u0915\u094d\u0937",
                "a" + "\u0301" * 70,
            ]
        ),
        min_size=1,
        max_size=60,
    ),
    data=st.data(),
)
def test_the_windowed_boundary_search_agrees_with_segmenting_the_whole_span(clusters, data):
    text = "".join(clusters)
    at = data.draw(st.integers(1, len(text)))
    below = [b for b in boundaries(text) if 0 < b <= at]
    assert grapheme_floor(text, 0, len(text), at) == (max(below) if below else at)

"""An overlap never starts a chunk inside a grapheme cluster, and the size still holds.

A family emoji is one user-perceived character of 7 code points and 18 cl100k tokens.
With an overlap of a few tokens, the repeated text used to begin inside it (a lone
ZWJ and half a family), and atoms left ``overlap`` tokens of room, so a cluster that a
chunk could hold was cut inside too. Now the overlap starts at a cluster boundary (or
is empty), and a cluster within ``size`` stays whole.
"""

from __future__ import annotations

import itertools

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.chunk import make_chunker
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # 18 cl100k tokens
THUMB = "\U0001f44d\U0001f3fd"  # thumbs up, skin tone: one cluster of two code points


def cut(
    text: str, size: int, overlap: int, chunker: str = "tokens", tokenizer: str = "cl100k"
) -> list[Chunk]:
    spec = ChunkSpec(chunker=chunker, size=size, overlap=overlap, tokenizer=tokenizer)
    kind = "markdown" if chunker == "markdown" else "text"
    chunks = make_chunker(spec).chunk(Document("d", text, kind=kind))
    count = get_counter(tokenizer).count
    for c in chunks:
        assert text[c.start : c.end] == c.text and 0 < c.n_tokens == count(c.text) <= size
    return chunks


def inside_clusters(text: str, chunks: list[Chunk]) -> list[int]:
    edges = {0} | {m.end() for m in regex.finditer(r"\X", text)}
    return [e for c in chunks for e in (c.start, c.end) if e not in edges]


@pytest.mark.parametrize("chunker", ["tokens", "markdown"])
@pytest.mark.parametrize("overlap", [1, 2, 3])
@pytest.mark.parametrize("size", [24, 32, 64])
def test_an_overlap_below_one_emoji_never_starts_inside_it(chunker, overlap, size):
    text = FAMILY * 60
    chunks = cut(text, size, overlap, chunker)
    assert len(chunks) > 10
    assert inside_clusters(text, chunks) == []
    assert all(c.text.startswith(FAMILY) for c in chunks)


@pytest.mark.parametrize("overlap", [2, 4, 8])
def test_a_cluster_between_size_minus_overlap_and_size_stays_whole(overlap):
    text = ("ab " + FAMILY) * 40
    chunks = cut(text, 20, overlap)
    assert inside_clusters(text, chunks) == []
    assert sum(FAMILY in c.text for c in chunks) >= 40


def test_the_overlap_is_kept_where_clusters_allow_it():
    text = " ".join(f"word{i} {THUMB}" for i in range(200))
    chunks = cut(text, 32, 6)
    assert inside_clusters(text, chunks) == []
    overlapping = sum(a.end > b.start for a, b in itertools.pairwise(chunks))
    assert overlapping == len(chunks) - 1


def test_a_cluster_above_the_size_is_still_cut_under_the_limit_with_an_overlap():
    text = "intro words " + "a" + "\u0301" * 200 + " tail words here"
    chunks = cut(text, 8, 3)
    assert chunks[0].text.startswith("intro") and chunks[-1].text.endswith("here")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clusters=st.lists(
        st.sampled_from(
            ["e\u0301", "a", " ", "word ", "\n", "\u6f22", FAMILY, THUMB, "\U0001f1eb\U0001f1f7"]
        ),
        min_size=1,
        max_size=150,
    ),
    size=st.integers(20, 80),
    overlap=st.integers(1, 12),
    tokenizer=st.sampled_from(["cl100k", "chars4"]),
)
def test_no_chunk_edge_falls_inside_a_cluster_that_fits_with_an_overlap(
    clusters, size, overlap, tokenizer
):
    text = "".join(clusters)
    chunks = cut(text, size, min(overlap, size - 1), tokenizer=tokenizer)
    assert inside_clusters(text, chunks) == []

"""A small word-salad corpus of files and helpers shared by the stored dense-index tests.

Every file is a few dozen words from a 13-word vocabulary, so chunks share words (the
hash embedder gives them positive cosines) and a 12-token chunk size gives each file a
handful of chunks.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import ctxselect as cs
from _support.word_salad import SPEC, WORDS
from ctxselect.embed import HashEmbedder

QUERIES = ("apple banana", "cherry", "kiwi lemon mango", "grape grape fig", "date elder honey")


def text(seed: int, n: int = 30) -> str:
    """A deterministic text of ``n`` words; different seeds give different texts."""
    pick = random.Random(seed).choice
    return " ".join(pick(WORDS) for _ in range(n))


def write_corpus(root: Path, n: int = 20) -> Path:
    """Write files ``f00.txt`` ... into ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"f{i:02d}.txt").write_text(text(i), encoding="utf-8")
    return root


def fresh_build(root: Path, folder: Path, **options: object) -> Path:
    """Copy ``root`` and index the copy from scratch (the reference for updated indexes)."""
    copy = folder / "files"
    shutil.copytree(root, copy)
    ix = folder / "ix"
    cs.index_paths([copy], ix, chunk=SPEC, embedder="hash", **options)  # type: ignore[arg-type]
    return ix


class CountingEmbedder:
    """The hash embedder, counting (and keeping) every text it is asked to embed."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim, self.model_id = "hash", self.inner.dim, self.inner.model_id
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.embed(texts, query=query)


def assert_same_hits(got: Sequence[cs.Hit], want: Sequence[cs.Hit], why: object = "") -> None:
    """Same chunks in the same order, scores equal (to float32 rounding)."""
    assert [h.chunk_id for h in got] == [h.chunk_id for h in want], why
    assert np.allclose([h.score for h in got], [h.score for h in want], rtol=0, atol=1e-6)
    assert [(h.doc_id, h.start, h.end, h.text) for h in got] == [
        (h.doc_id, h.start, h.end, h.text) for h in want
    ]


def assert_same_results(got: cs.Index, want: cs.Index, modes: Sequence[str], k: int = 15) -> None:
    """Every query gives the same hits in ``got`` as in ``want`` for every mode."""
    for mode in modes:
        for query in QUERIES:
            assert_same_hits(got.search(query, k, mode), want.search(query, k, mode), (mode, query))

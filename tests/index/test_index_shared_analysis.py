"""A write analyzes its chunks once for bm25 and the tfidf modes, with the same arrays."""

from __future__ import annotations

import numpy as np

from ctxselect.index.writer import ModeOps, SharedTexts, analyze, indexed_text
from ctxselect.retrieve import _corpus
from ctxselect.retrieve._sparse import index_corpus, raw_arrays
from ctxselect.retrieve.analyze import BM25Analyzer, TfidfAnalyzer
from ctxselect.types import Chunk

TEXTS = ["Amyloid fibrils, amyloid beta", "Sepsis trial 2b outcomes", "", "abc123def x_y"]


def _chunks() -> list[Chunk]:
    return [
        Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t, n_tokens=1, header="Title" if i % 2 else "")
        for i, t in enumerate(TEXTS)
    ]


def _ops(key: str, analyzer: object) -> ModeOps:
    def run(texts):  # type: ignore[no-untyped-def]
        return raw_arrays(index_corpus(texts, analyzer))  # type: ignore[arg-type]

    return ModeOps(key, run, analyzer.terms, lambda raw: raw)  # type: ignore[attr-defined]


def test_shared_texts_read_like_the_list_of_indexed_texts() -> None:
    chunks = _chunks()
    texts = SharedTexts(chunks)
    expected = [indexed_text(c) for c in chunks]
    assert len(texts) == len(expected) and list(texts) == expected
    assert texts[1] == expected[1] and texts[-1] == expected[-1]
    assert texts[1:3] == expected[1:3]
    assert texts.memo == {}


def test_one_word_pass_for_bm25_and_tfidf(monkeypatch) -> None:
    chunks = _chunks()
    modes = {
        "bm25": _ops("bm25", BM25Analyzer()),
        "tfidf": _ops("words", TfidfAnalyzer()),
        "tfidf-sum": _ops("words", TfidfAnalyzer()),
    }
    plain = [indexed_text(c) for c in chunks]
    expected = {
        "bm25": raw_arrays(index_corpus(plain, BM25Analyzer())),
        "tfidf": raw_arrays(index_corpus(plain, TfidfAnalyzer())),
    }
    reads: list[str] = []
    real = _corpus.base_words
    monkeypatch.setattr(_corpus, "base_words", lambda text: reads.append(text) or real(text))
    got = analyze(chunks, modes)
    assert reads == plain  # every chunk's text split once, for all three modes
    assert got["tfidf"] is got["tfidf-sum"]
    for mode, arrays in expected.items():
        for name, array in arrays.items():
            assert np.array_equal(got[mode][name], array), (mode, name)

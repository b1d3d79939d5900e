"""The build side of the keyword indexes: one word pass shared by bm25 and tfidf, exactly.

Sharing must never change a posting: every check compares against each analyzer's own
``words`` (what queries use and what a build without sharing does).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.retrieve import _corpus
from ctxselect.retrieve._corpus import BASE_WORDS, base_pass, derive, word_pass_of
from ctxselect.retrieve._sparse import Postings, index_corpus
from ctxselect.retrieve.analyze import BM25Analyzer, TfidfAnalyzer

# letters, digits, underscores, case pairs whose lowercase changes length or context
# (İ, final Σ), non-ASCII words, CJK, dashes and punctuation
ALPHABET = "abcXYZ019_ -.,;\n\tİΣσςßéÀ中文ǅ'!"
TRICKY = [
    "İstanbul ÀBC abc123def x_yz_abc ßtraße ΩΜΕΓΑΣ déjà-vu 中文字 __init__ a1b2c3ddd",
    "",
    "a b c",
    "ǅemal OΣ OΣA",
    "parseHttpHeader max_tokens HTTPServer 3dprinting",
]


class Memo(list[str]):
    """Texts with a memo: what the writer hands every keyword mode of one write."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(texts)
        self.memo: dict[str, object] = {}


def _same(a: Postings, b: Postings) -> None:
    assert a.vocab == b.vocab
    for name in ("indptr", "rows", "tfs", "lengths"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.word_terms == b.word_terms


def _tokens(passed: _corpus.WordPass) -> list[list[str]]:
    """The words of each text, read back from a word pass."""
    words = [passed.words[i] for i in passed.tokens.tolist()]
    edges = np.concatenate([[0], np.cumsum(passed.counts)]).tolist()
    return [words[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=40), max_size=6))
def test_derived_words_equal_each_analyzers_own_words(texts: list[str]) -> None:
    base = base_pass(texts)
    for analyzer in (TfidfAnalyzer(), BM25Analyzer()):
        derived = derive(base, analyzer.base_split)
        assert derived.tokens.dtype == np.int32 and derived.counts.dtype == np.int64
        assert _tokens(derived) == [analyzer.words(t) for t in texts]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=60), min_size=1, max_size=6))
def test_shared_pass_gives_the_postings_of_separate_passes(texts: list[str]) -> None:
    shared = Memo(texts)
    for analyzer in (BM25Analyzer(), TfidfAnalyzer()):
        _same(index_corpus(shared, analyzer), index_corpus(list(texts), analyzer))


def test_bm25_and_tfidf_share_one_pass_over_the_texts(monkeypatch) -> None:
    texts = Memo(TRICKY * 3)
    bm25, tfidf = BM25Analyzer(), TfidfAnalyzer()
    expected = [index_corpus(list(texts), a) for a in (bm25, tfidf)]
    reads = []
    real = _corpus.base_words
    monkeypatch.setattr(_corpus, "base_words", lambda text: reads.append(text) or real(text))

    def never(text: str) -> list[str]:
        raise AssertionError("a shared build does not split texts per analyzer")

    monkeypatch.setattr(bm25, "words", never)
    monkeypatch.setattr(tfidf, "words", never)
    got = [index_corpus(texts, a) for a in (bm25, tfidf)]
    assert len(reads) == len(texts)  # each text read once, for both modes
    assert BASE_WORDS in texts.memo
    for a, b in zip(got, expected, strict=True):
        _same(a, b)


def test_identifier_parts_are_not_derived_from_base_words() -> None:
    analyzer = BM25Analyzer(identifiers=True)
    assert analyzer.base_split is None
    texts = Memo(TRICKY)
    passed = word_pass_of(texts, analyzer)
    assert _tokens(passed) == [analyzer.words(t) for t in TRICKY]
    assert texts.memo == {}


@pytest.mark.parametrize("block", [1, 5, 1 << 16])
def test_wide_keys_and_small_blocks_give_the_same_postings(monkeypatch, block: int) -> None:
    """Above int32 range, (term, row) keys are int64; tokens go a block at a time; the
    postings do not change."""
    texts = ["", *TRICKY, "the the the", *TRICKY, ""]
    narrow = [index_corpus(texts, a) for a in (BM25Analyzer(), TfidfAnalyzer())]
    monkeypatch.setattr(_corpus, "_INT32_MAX", 10)  # every key now counts as wide
    monkeypatch.setattr(_corpus, "_BLOCK", block)
    wide = [index_corpus(Memo(texts), a) for a in (BM25Analyzer(), TfidfAnalyzer())]
    for a, b in zip(wide, narrow, strict=True):
        _same(a, b)


@pytest.mark.parametrize("texts", [[], [""], ["", "a"], ["the of and"]])
def test_empty_and_wordless_texts(texts: list[str]) -> None:
    for analyzer in (BM25Analyzer(), TfidfAnalyzer()):
        shared = index_corpus(Memo(texts), analyzer)
        _same(shared, index_corpus(texts, analyzer))
        assert shared.lengths.tolist() == [len(analyzer.terms(t)) for t in texts]


@pytest.mark.parametrize("block", [1, 2, 3, 7])
def test_derive_expands_block_by_block_the_same(monkeypatch, block: int) -> None:
    texts = [*TRICKY, "", "abc1def2ghi jkl", *TRICKY]
    monkeypatch.setattr(_corpus, "_BLOCK", block)
    derived = derive(base_pass(texts), TfidfAnalyzer().base_split)
    assert _tokens(derived) == [TfidfAnalyzer().words(t) for t in texts]


def _reference(texts: list[str], analyzer) -> dict[str, list[tuple[int, int]]]:
    """Each term's (row, count) pairs, row order, counted the plain way."""
    from collections import Counter

    out: dict[str, list[tuple[int, int]]] = {}
    for row, text in enumerate(texts):
        for term, count in sorted(Counter(analyzer.terms(text)).items()):
            out.setdefault(term, []).append((row, count))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=60), max_size=8), st.booleans())
def test_postings_equal_counting_each_texts_terms(texts: list[str], wide: bool) -> None:
    """CSC postings, as built in place from sorted (term, row) keys, narrow or wide."""
    with pytest.MonkeyPatch.context() as patch:
        if wide:
            patch.setattr(_corpus, "_INT32_MAX", 0)
        for analyzer in (BM25Analyzer(), TfidfAnalyzer()):
            built = index_corpus(Memo(texts), analyzer)
            expected = _reference(texts, analyzer)
            assert built.vocab == sorted(expected)
            for t, term in enumerate(built.vocab):
                a, b = built.indptr[t], built.indptr[t + 1]
                got = list(zip(built.rows[a:b].tolist(), built.tfs[a:b].tolist(), strict=True))
                assert got == expected[term]
            assert built.indptr[-1] == len(built.rows)
            assert built.lengths.tolist() == [len(analyzer.terms(t)) for t in texts]

"""TfidfVectors: the cosine retriever's unit tf-idf weights over any analyzer, as cosines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.retrieve import TfidfRetriever
from ctxselect.retrieve._sparse import index_corpus
from ctxselect.retrieve.analyze import BM25Analyzer, TfidfAnalyzer
from ctxselect.retrieve.tfidf import TfidfVectors, tfidf_idfs, unit_tfidf
from ctxselect.types import Chunk, ChunkTable

WORDS = ["apple", "banana", "cherry", "running", "runs", "run", "the", "of", "fox", "date"]


def _dense_cosines(texts: list[str]) -> np.ndarray:
    """The cosine matrix from a dense count matrix: BM25 terms, ln((1 + N) / (1 + df)) + 1."""
    terms = [BM25Analyzer().terms(t) for t in texts]
    vocab = sorted({t for ts in terms for t in ts})
    counts = np.array([[ts.count(v) for v in vocab] for ts in terms], dtype=float)
    counts = counts.reshape(len(texts), len(vocab))
    idf = np.log((1 + len(texts)) / (1 + (counts > 0).sum(axis=0))) + 1
    x = counts * idf
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return x @ x.T


TEXTS = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=12))
def test_cosines_match_the_formula(texts: list[str]) -> None:
    # Sums run in another order than the matrix product's: equal to rounding, not bits.
    vectors = TfidfVectors(texts, BM25Analyzer())
    expected = _dense_cosines(texts)
    for a in range(len(texts)):
        assert vectors.cosines(a) == pytest.approx(expected[a], abs=1e-12)


def test_same_text_same_cosines_and_no_terms_no_similarity() -> None:
    texts = ["apple runs", "the of", "apple running", "banana fox"]
    vectors = TfidfVectors(texts, BM25Analyzer())
    assert vectors.cosines(0)[2] == vectors.cosines(2)[0] == pytest.approx(1.0)  # run = runs
    assert vectors.cosines(1).tolist() == [0.0, 0.0, 0.0, 0.0]  # stop words only
    assert vectors.cosines(3)[3] == pytest.approx(1.0) and vectors.cosines(3)[0] == 0.0


def test_the_cosine_retriever_stores_unit_tfidf() -> None:
    texts = ["apple banana", "apple cherry cherry", "date", "apple"]
    table = ChunkTable.from_chunks(
        [Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t) for i, t in enumerate(texts)]
    )
    postings = index_corpus(texts, TfidfAnalyzer())
    idf = tfidf_idfs(np.diff(postings.indptr), len(texts))
    weights = TfidfRetriever.build(table).arrays()["weights"]
    assert np.array_equal(weights, unit_tfidf(postings, idf).astype(np.float32))

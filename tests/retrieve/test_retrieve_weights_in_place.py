"""Posting weights are computed in place to spare a build's memory: the same bits as the
plain formulas, written out here the obvious way."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.config import BM25Params
from ctxselect.retrieve._sparse import index_corpus
from ctxselect.retrieve.analyze import BM25Analyzer, TfidfAnalyzer
from ctxselect.retrieve.bm25 import bm25_idfs, bm25_weights
from ctxselect.retrieve.tfidf import TfidfSumRetriever, tfidf_idfs, tfidf_norms, unit_tfidf

WORDS = ["apple", "berry", "cherry", "date", "elder", "fig", "grape"]
TEXTS = st.lists(
    st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), min_size=1, max_size=9
)


def _term_of_posting(postings) -> np.ndarray:
    df = np.diff(postings.indptr)
    return np.repeat(np.arange(len(df)), df)


@settings(max_examples=100, deadline=None)
@given(TEXTS, st.sampled_from([BM25Params(), BM25Params(k1=0.9, b=0.4), BM25Params(b=0.0)]))
def test_bm25_weights_equal_the_plain_formula(texts: list[str], params: BM25Params) -> None:
    p = index_corpus(texts, BM25Analyzer())
    n, df = len(p.lengths), np.diff(p.indptr)
    dl = p.lengths.astype(np.float64)
    avgdl = float(dl.mean()) if n else 0.0
    norm = params.k1 * (1.0 - params.b + params.b * dl / avgdl) if avgdl > 0 else dl
    tf = p.tfs.astype(np.float64)
    plain = bm25_idfs(df, n)[_term_of_posting(p)] * tf / (tf + norm[p.rows])
    got = bm25_weights(p, params)
    assert got.dtype == plain.dtype and np.array_equal(got, plain)


@settings(max_examples=100, deadline=None)
@given(TEXTS)
def test_tfidf_weights_equal_the_plain_formulas(texts: list[str]) -> None:
    p = index_corpus(texts, TfidfAnalyzer())
    idf = tfidf_idfs(np.diff(p.indptr), len(p.lengths))
    x = p.tfs * np.repeat(idf, np.diff(p.indptr))
    norms = np.sqrt(np.bincount(p.rows, x * x, minlength=len(p.lengths)))
    assert np.array_equal(tfidf_norms(p, idf), norms)
    unit = np.divide(x, norms[p.rows], out=np.zeros_like(x), where=norms[p.rows] > 0)
    assert np.array_equal(unit_tfidf(p, idf), unit)
    summed = TfidfSumRetriever.__new__(TfidfSumRetriever)
    summed._idf = idf
    plain_sum = p.tfs / p.lengths[p.rows].astype(np.float64) * np.repeat(idf, np.diff(p.indptr))
    assert np.array_equal(summed._compute_weights(p), plain_sum)

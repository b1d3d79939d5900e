"""English stop words of the BM25 analyzer, kept here as data.

Source: ``STOPWORDS_EN`` of bm25s 0.3.16 (``bm25s/stopwords.py``), which is Lucene's
``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``: the same 33 words, so our tokens match bm25s.
"""

from __future__ import annotations

STOPWORDS_EN: frozenset[str] = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    )
)

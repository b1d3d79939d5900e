"""Text analysis for the keyword retrievers: text -> words -> index terms.

Two analyzers. The BM25 one follows bm25s (and scikit-learn's CountVectorizer): lowercase,
regex ``(?u)\\b\\w\\w+\\b``, drop English stop words (checked before stemming, as bm25s
does), Snowball English stemming through PyStemmer. The TF-IDF one is the chapter's:
lowercase runs of three or more ASCII letters, no stop words, no stemming.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Protocol

from ctxselect.retrieve._stopwords import STOPWORDS_EN

BM25_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
TFIDF_TOKEN_PATTERN = r"[a-z]{3,}"
_MAX_STEMS = 1_000_000


class Analyzer(Protocol):
    """Splits text into words and maps words to index terms."""

    def words(self, text: str) -> list[str]:
        """Return the lowercase words of ``text``, in order."""
        ...

    def map_words(self, words: list[str]) -> list[str | None]:
        """Return the index term of each word, or None for a word that is dropped."""
        ...

    def terms(self, text: str) -> list[str]:
        """Return the index terms of ``text``, in order (dropped words left out)."""
        ...


class BM25Analyzer:
    """Lowercase, bm25s token regex, optional English stop words, optional Snowball stems.

    Stems are cached in a dict (PyStemmer's own cache is small), so each distinct word is
    stemmed once per analyzer.
    """

    def __init__(self, *, stem: bool = True, stopwords: bool = True) -> None:
        self.stem = stem
        self.stopwords = stopwords
        self._findall: Callable[[str], list[str]] = re.compile(BM25_TOKEN_PATTERN).findall
        self._stop = STOPWORDS_EN if stopwords else frozenset()
        self._stem_words: Callable[[list[str]], list[str]] | None = None
        if stem:
            import Stemmer  # PyStemmer: Snowball in C, as bm25s and Lucene stem; a core dependency

            self._stem_words = Stemmer.Stemmer("english").stemWords
        self._stems: dict[str, str] = {}
        self._lock = threading.Lock()

    def words(self, text: str) -> list[str]:
        """Return the lowercase ``\\w\\w+`` tokens of ``text``."""
        return self._findall(text.lower())

    def map_words(self, words: list[str]) -> list[str | None]:
        """Return each word's stem, or None for a stop word."""
        stop = self._stop
        if self._stem_words is None:
            return [None if w in stop else w for w in words]
        stems = self._stems
        if len(stems) > _MAX_STEMS:  # bound the cache; replaced, not cleared (threads)
            stems = self._stems = {}
        new = [w for w in dict.fromkeys(words) if w not in stems and w not in stop]
        if new:
            with self._lock:  # a PyStemmer Stemmer is not thread-safe
                stemmed = self._stem_words(new)
            stems.update(zip(new, stemmed, strict=True))
        return [None if w in stop else stems[w] for w in words]

    def terms(self, text: str) -> list[str]:
        """Return the index terms of ``text``: stop words dropped, words stemmed."""
        return [t for t in self.map_words(self.words(text)) if t is not None]


class TfidfAnalyzer:
    """The chapter's words: ``re.findall(r"[a-z]{3,}", text.lower())``, used as they are."""

    stem = False
    stopwords = False

    def __init__(self) -> None:
        self._findall: Callable[[str], list[str]] = re.compile(TFIDF_TOKEN_PATTERN).findall

    def words(self, text: str) -> list[str]:
        """Return the lowercase runs of three or more letters of ``text``."""
        return self._findall(text.lower())

    def map_words(self, words: list[str]) -> list[str | None]:
        """Return the words unchanged: every word is its own term."""
        return list(words)

    def terms(self, text: str) -> list[str]:
        """Return the words of ``text``."""
        return self.words(text)

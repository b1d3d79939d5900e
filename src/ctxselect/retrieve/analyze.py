"""Text analysis for the keyword retrievers: text -> words -> index terms.

Two analyzers. The BM25 one follows bm25s (and scikit-learn's CountVectorizer): lowercase,
regex ``(?u)\\b\\w\\w+\\b``, drop English stop words (checked before stemming, as bm25s
does), Snowball English stemming through PyStemmer. The TF-IDF one is the chapter's:
lowercase runs of three or more ASCII letters, no stop words, no stemming.

With ``identifiers`` the BM25 analyzer also indexes the parts of ``camelCase``,
``PascalCase``, ``snake_case`` and ``kebab-case`` identifiers next to the whole identifier
(``parseHttpHeader`` -> ``parsehttpheader parse http header``), as code search engines do
(GitHub's and Sourcegraph's tokenizers; CodeSearchNet's baselines split identifiers too),
so the words of a question match them.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from typing import Protocol

from ctxselect.retrieve._stopwords import STOPWORDS_EN

BM25_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
# kebab-case identifiers whole (``max-tokens``), else the words of BM25_TOKEN_PATTERN
IDENTIFIER_PATTERN = r"(?u)\b\w+(?:-\w+)+\b|\b\w\w+\b"
# where an identifier splits: ``_`` and ``-``, lower or digit -> upper, ``HTTPServer``'s P|S
_BOUNDARY = re.compile(r"[_-]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_MAX_EXPANSIONS = 1_000_000
WORD = "word"
"""The form of a word that is not an identifier with parts (see :meth:`BM25Analyzer.forms`)."""
IDENTIFIER = "identifier"
"""The form of a whole identifier that has parts."""
TFIDF_TOKEN_PATTERN = r"[a-z]{3,}"
_MAX_STEMS = 1_000_000


class Analyzer(Protocol):
    """Splits text into words and maps words to index terms.

    An analyzer may also have ``base_split``: a function such that its words of a text are
    ``base_split(w)`` for each lowercase word ``w`` of the text (``BM25_TOKEN_PATTERN``), in order;
    a build then shares one pass over the texts between such analyzers.
    """

    def words(self, text: str) -> list[str]:
        """Return the lowercase words of ``text``, in order."""
        ...

    def map_words(self, words: list[str]) -> list[str | None]:
        """Return the index term of each word, or None for a word that is dropped."""
        ...

    def terms(self, text: str) -> list[str]:
        """Return the index terms of ``text``, in order (dropped words left out)."""
        ...


def identifier_parts(token: str) -> list[str]:
    """Return ``token`` lowercased, then its parts if it has several (``identifiers``).

    ``parseHttpHeader`` -> ``[parsehttpheader, parse, http, header]``; ``max_tokens`` ->
    ``[max_tokens, max, tokens]``; a part of one character is dropped, as the plain word
    regex drops one-character words; a word without parts is returned alone.
    """
    low = token.lower()
    parts = [p.lower() for p in _BOUNDARY.split(token) if len(p) > 1]
    if not parts or parts == [low]:
        return [low]
    return [low, *parts]


def same_word(word: str) -> list[str]:
    """The ``base_split`` of an analyzer whose words are the base words themselves."""
    return [word]


class _Expansions(dict[str, list[str]]):
    """Token -> :func:`identifier_parts`, computed once per distinct token."""

    def __missing__(self, token: str) -> list[str]:
        value = self[token] = identifier_parts(token)
        return value


class BM25Analyzer:
    """Lowercase, bm25s token regex, optional English stop words, optional Snowball stems.

    Stems are cached in a dict (PyStemmer's own cache is small), so each distinct word is
    stemmed once per analyzer. With ``identifiers``, each identifier is followed by its
    parts (:func:`identifier_parts`), each then analyzed as a word.
    """

    def __init__(
        self, *, stem: bool = True, stopwords: bool = True, identifiers: bool = False
    ) -> None:
        self.stem = stem
        self.stopwords = stopwords
        self.identifiers = identifiers
        self._findall: Callable[[str], list[str]] = re.compile(BM25_TOKEN_PATTERN).findall
        self._find_identifiers: Callable[[str], list[str]] = re.compile(IDENTIFIER_PATTERN).findall
        self._expansions = _Expansions()
        self._stop = STOPWORDS_EN if stopwords else frozenset()
        self._stem_words: Callable[[list[str]], list[str]] | None = None
        if stem:
            import Stemmer  # PyStemmer: Snowball in C, as bm25s and Lucene stem; a core dependency

            self._stem_words = Stemmer.Stemmer("english").stemWords
        self._stems: dict[str, str] = {}
        self._lock = threading.Lock()
        # words are the base words themselves (identifiers: another regex, no sharing)
        self.base_split: Callable[[str], list[str]] | None = None if identifiers else same_word

    def words(self, text: str) -> list[str]:
        """Return the lowercase ``\\w\\w+`` tokens of ``text`` (identifiers: and parts)."""
        if not self.identifiers:
            return self._findall(text.lower())
        expansions = self._expansions
        if len(expansions) > _MAX_EXPANSIONS:  # replaced, not cleared (threads)
            expansions = self._expansions = _Expansions()
        return list(itertools.chain.from_iterable(map(expansions.__getitem__, self._tokens(text))))

    def _tokens(self, text: str) -> list[str]:
        return self._find_identifiers(text) if self.identifiers else self._findall(text.lower())

    def forms(self, text: str) -> dict[str, list[str]]:
        """Return, for each index term of ``text``, the forms it occurs in, in order.

        A form is :data:`WORD` (a word without parts), :data:`IDENTIFIER` (a whole
        identifier with parts) or ``"part of NAME"`` (a part of identifier ``NAME`` as
        written). This is what ``explain`` shows of a term that matched.
        """
        pairs: list[tuple[str, str]] = []
        for token in self._tokens(text):
            words = identifier_parts(token) if self.identifiers else [token]
            if len(words) == 1:
                pairs.append((words[0], WORD))
                continue
            pairs.append((words[0], IDENTIFIER))
            pairs.extend((w, f"part of {token}") for w in words[1:])
        found: dict[str, list[str]] = {}
        terms = self.map_words([w for w, _ in pairs])
        for term, (_, form) in zip(terms, pairs, strict=True):
            if term is not None and form not in found.setdefault(term, []):
                found[term].append(form)
        return found

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
        # a run of ASCII letters lies inside one base (``\w\w+``) word: split those
        self.base_split: Callable[[str], list[str]] = self._findall

    def words(self, text: str) -> list[str]:
        """Return the lowercase runs of three or more letters of ``text``."""
        return self._findall(text.lower())

    def map_words(self, words: list[str]) -> list[str | None]:
        """Return the words unchanged: every word is its own term."""
        return list(words)

    def terms(self, text: str) -> list[str]:
        """Return the words of ``text``."""
        return self.words(text)

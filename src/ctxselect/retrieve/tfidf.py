"""The chapter's TF-IDF scorers over chunk rows: cosine ("tfidf") and plain sum ("tfidf-sum").

Words are the chapter's: ``re.findall(r"[a-z]{3,}", text.lower())``, no stemming, no stop
words. ``idf(t) = ln(N / df(t))`` over the N chunks (Spärck Jones 1972, natural log), so a
word in every chunk weighs 0.

- ``tfidf``: cosine between the query's and the chunk's tf x idf vectors, tf = raw counts.
  Query words absent from the index have no idf and are left out of the query vector.
- ``tfidf-sum``: the sum over distinct query words t of ``tf(t, chunk) / words(chunk) *
  idf(t)``.

Weights are precomputed per (term, row) as float32 and summed as float64, so ``explain``
reproduces ``search``'s score exactly (see ``ctxselect.retrieve._sparse``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.errors import ConfigError
from ctxselect.retrieve._sparse import (
    Postings,
    QueryTerms,
    SparseRetriever,
    add_in_order,
    explain_terms,
    index_corpus,
    postings_from_arrays,
    raw_arrays,
)
from ctxselect.retrieve.analyze import Analyzer, TfidfAnalyzer
from ctxselect.types import ChunkTable, Explanation, Rows, TermExplanation


def _no_params(mode: str, params: Mapping[str, Any]) -> None:
    if params:
        raise ConfigError(
            f"mode {mode!r} takes no parameters, got {', '.join(sorted(params))}: "
            f"remove them (only mode 'bm25' has k1, b, stem, stopwords)"
        )


def tfidf_idfs(df: np.ndarray, n: int) -> np.ndarray:
    """``ln(N / df)`` of every term; 0 for a term no row holds (it matches nothing)."""
    df = np.asarray(df)
    out = np.zeros(len(df))
    held = df > 0
    if n > 0:
        out[held] = np.log(n / df[held])
    return out


def _tf_idf(postings: Postings, idf: np.ndarray) -> np.ndarray:
    """Every posting's tf x idf (float64), made in one posting-sized array."""
    x = np.repeat(np.asarray(idf, dtype=np.float64), np.diff(postings.indptr))
    x *= postings.tfs
    return x


def tfidf_norms(postings: Postings, idf: np.ndarray) -> np.ndarray:
    """Return each row's tf x idf vector length (``idf``: one value per term)."""
    x = _tf_idf(postings, idf)
    x *= x  # in place: a build's memory peak is posting-sized float64 arrays like this
    return np.sqrt(np.bincount(postings.rows, x, minlength=len(postings.lengths)))


def unit_tfidf(postings: Postings, idf: np.ndarray) -> np.ndarray:
    """Return every posting's tf x idf over its row's vector length (float64).

    The rows become unit vectors, so adding up products of two rows' weights term by
    term gives their cosine; an empty row stays 0 (its length is 0 only when every weight
    in it is, idf being >= 0). ``idf`` holds one value per term.
    """
    x = _tf_idf(postings, idf)
    norm_of_posting = tfidf_norms(postings, idf)[postings.rows]
    np.divide(x, norm_of_posting, out=x, where=norm_of_posting > 0)
    return x


class TfidfRetriever(SparseRetriever):
    """Cosine similarity of tf x idf vectors (the chapter's TF-IDF scorer)."""

    mode = "tfidf"

    def __init__(self, table: Rows, postings: Postings, weights: np.ndarray | None = None) -> None:
        n = len(table)
        df = np.diff(postings.indptr)
        self._idf = np.log(n / df) if len(df) else np.zeros(0)
        if weights is None:
            weights = self._compute_weights(postings)
        super().__init__(table, TfidfAnalyzer(), postings, weights)
        self._norms: np.ndarray | None = None

    @classmethod
    def analysis(cls, **params: Any) -> tuple[str, TfidfAnalyzer]:
        """Return the analyzer the index uses and a key naming it (equal keys: same terms)."""
        _no_params(cls.mode, params)
        return "words", TfidfAnalyzer()

    @classmethod
    def arrays_from_postings(cls, postings: Postings, **params: Any) -> dict[str, np.ndarray]:
        """Return the stored arrays for ``postings``, as ``build(...).arrays()`` would."""
        _no_params(cls.mode, params)
        probe = cls.__new__(cls)  # the weight formulas only need the idf, not a table
        n = len(postings.lengths)
        df = np.diff(postings.indptr)
        probe._idf = np.log(n / df) if len(df) else np.zeros(0)
        weights = probe._compute_weights(postings)
        return {**raw_arrays(postings), "weights": np.ascontiguousarray(weights, dtype=np.float32)}

    @classmethod
    def build(cls, table: ChunkTable, **params: Any) -> TfidfRetriever:
        """Analyze every chunk (``table.indexed_text(row)``) and build the index."""
        _no_params(cls.mode, params)
        texts = [table.indexed_text(row) for row in range(len(table))]
        return cls(table, index_corpus(texts, TfidfAnalyzer()))

    @classmethod
    def load(cls, table: Rows, arrays: Mapping[str, np.ndarray], **params: Any) -> TfidfRetriever:
        """Rebuild the retriever from :meth:`arrays` without re-analyzing the corpus."""
        _no_params(cls.mode, params)
        postings = postings_from_arrays(arrays, table, cls.mode)
        return cls(table, postings, np.asarray(arrays["weights"]))

    def arrays(self) -> dict[str, np.ndarray]:
        """Vocabulary (UTF-8, newline-joined), CSC postings, lengths, float32 weights."""
        return self._base_arrays()

    def _idf_of_postings(self, postings: Postings) -> np.ndarray:
        """Return idf of each posting's term (postings are grouped by term)."""
        return np.repeat(self._idf, np.diff(postings.indptr))

    def _compute_weights(self, postings: Postings) -> np.ndarray:
        """Return every posting's tf x idf divided by its chunk's vector length."""
        return unit_tfidf(postings, self._idf)

    def _query_vector(self, query: str) -> tuple[dict[str, int], dict[str, float]]:
        """Return the query's word counts and each known word's share q_w / |q|."""
        counts: dict[str, int] = {}
        for word in self.analyzer.words(query):
            counts[word] = counts.get(word, 0) + 1
        q = {}
        for word, c in counts.items():
            tid = self._term_id.get(word)
            if tid is not None and self._idf[tid] > 0:
                q[word] = c * float(self._idf[tid])
        q_norm = math.sqrt(add_in_order(v * v for v in q.values()))
        return counts, {w: v / q_norm for w, v in q.items()}

    def _query(self, query: str) -> QueryTerms:
        _, shares = self._query_vector(query)
        term_id = self._term_id
        return [term_id[w] for w in shares], list(shares.values())

    def idf_of(self, df: np.ndarray, n: int) -> np.ndarray:
        """``ln(N / df)`` of every term."""
        return tfidf_idfs(df, n)

    def row_factors(
        self,
        tfs: np.ndarray,
        lengths: np.ndarray,
        rows: np.ndarray,
        idf: np.ndarray,
        avgdl: float,
    ) -> np.ndarray:
        """``tf / |d|``, with ``|d|`` the row's tf x idf vector length under ``idf``."""
        x = tfs * idf
        norms = np.sqrt(np.bincount(rows, x * x, minlength=len(lengths)))
        per = norms[rows]
        return np.divide(tfs.astype(np.float64), per, out=np.zeros(len(per)), where=per > 0)

    def query_weights(
        self, terms: list[str], tid_of: Mapping[str, int], idf: np.ndarray
    ) -> QueryTerms:
        """Each known word once, weighted ``count * idf / |q|`` (the cosine's query side)."""
        counts: dict[str, int] = {}
        for word in terms:
            counts[word] = counts.get(word, 0) + 1
        q = {}
        for word, c in counts.items():
            tid = tid_of.get(word)
            if tid is not None and idf[tid] > 0:
                q[tid] = c * float(idf[tid])
        q_norm = math.sqrt(add_in_order(v * v for v in q.values()))
        return list(q), [v / q_norm for v in q.values()]

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Take the score apart: a term contributes its stored weight times its multiplier.

        The multipliers (:meth:`_multipliers`) are the cosine's query side here and 1 in
        :class:`TfidfSumRetriever`. The contributions add up (in query order) to exactly
        the score :meth:`search` reports.
        """
        row = self._row(chunk_id)
        multiplier = self._multipliers(query)

        def part(word: str, tid: int) -> TermExplanation:
            tf, weight = self._posting(tid, row)
            idf = float(self._idf[tid])
            return TermExplanation(word, float(tf), self._df(tid), idf, weight * multiplier[word])

        return explain_terms(
            query, chunk_id, self.mode, multiplier, self._term_id, part, self._note(row)
        )

    def _multipliers(self, query: str) -> dict[str, float]:
        """Return each query word's multiplier: its share q_t / |q| of the query vector.

        The cosine's contribution of t is q_t * d_t / (|q| |d|): the stored d_t / |d|
        times q_t / |q|. A word with idf 0 is left out of |q| and gets 0.
        """
        counts, shares = self._query_vector(query)
        return {word: shares.get(word, 0.0) for word in counts}

    def _note(self, row: int) -> str:
        if self._norms is None:
            self._norms = tfidf_norms(self.postings, self._idf)
        return (
            f"cosine of tf x idf vectors: contribution = q_w * d_w / (|q| |d|) with "
            f"q_w = count in query * idf, d_w = tf * idf, |d| = {float(self._norms[row]):.6g}; "
            f"idf = ln(N/df), N={self._n}; d_w/|d| stored as float32, summed as float64; "
            f"terms with df=0 are not in the index and are left out of |q|"
        )


class TfidfSumRetriever(TfidfRetriever):
    """Sum over distinct query words of tf/words(chunk) x idf (the chapter's plain variant)."""

    mode = "tfidf-sum"

    def _compute_weights(self, postings: Postings) -> np.ndarray:
        """Return every posting's tf / (words in its chunk) x idf."""
        weights = postings.lengths[postings.rows].astype(np.float64)
        np.divide(postings.tfs, weights, out=weights)  # tf / words, in place
        weights *= self._idf_of_postings(postings)
        return weights

    def _query(self, query: str) -> QueryTerms:
        tids = list(dict.fromkeys(self._term_ids(query)))
        return [t for t in tids if self._idf[t] > 0], None

    exact_live = True

    def live_weights(
        self, tfs: np.ndarray, dl: np.ndarray, idf: np.ndarray | np.floating, avgdl: float
    ) -> np.ndarray:
        """``tf / words(chunk) * idf`` as :meth:`_compute_weights` computes it, as float32."""
        return (tfs / dl.astype(np.float64) * idf).astype(np.float32)

    def query_weights(
        self, terms: list[str], tid_of: Mapping[str, int], idf: np.ndarray
    ) -> QueryTerms:
        """Each known word once, with idf > 0; no multipliers."""
        tids = [tid_of[t] for t in dict.fromkeys(terms) if t in tid_of]
        return [t for t in tids if idf[t] > 0], None

    def _multipliers(self, query: str) -> dict[str, float]:
        """Return 1 for each distinct query word: t contributes tf / words(chunk) * idf(t).

        That is the stored weight, counted once however often t is in the query.
        """
        return dict.fromkeys(self.analyzer.words(query), 1.0)

    def _note(self, row: int) -> str:
        return (
            f"tf-idf sum: contribution = tf / words * idf with words = "
            f"{int(self.postings.lengths[row])} in this chunk; idf = ln(N/df), N={self._n}; "
            f"a word repeated in the query counts once; weights stored as float32, summed "
            f"as float64; terms with df=0 are not in the index"
        )


class TfidfVectors:
    """Texts as unit-length tf x idf vectors (:func:`unit_tfidf`), for their cosines.

    Terms are ``analyzer``'s; idf is smoothed, ``ln((1 + N) / (1 + df)) + 1`` (as in
    scikit-learn), so a term every text holds still counts.
    """

    def __init__(self, texts: Sequence[str], analyzer: Analyzer) -> None:
        postings = index_corpus(texts, analyzer)
        n = len(texts)
        df = np.diff(postings.indptr)
        self._n = n
        self._ip: list[int] = postings.indptr.tolist()
        self._rows = postings.rows
        self._weights = unit_tfidf(postings, np.log((1 + n) / (1 + df)) + 1)
        by_row = np.argsort(postings.rows, kind="stable")  # each text's terms, in term order
        self._terms: list[int] = np.repeat(np.arange(len(df)), df)[by_row].tolist()
        self._own: list[float] = self._weights[by_row].tolist()
        self._start: list[int] = [0, *np.cumsum(np.bincount(postings.rows, minlength=n)).tolist()]

    def cosines(self, row: int) -> np.ndarray:
        """Return the cosine of text ``row`` with every text (0 where no term is shared).

        Text ``row``'s vector is scored as a query is: its weights times each posting's.
        """
        s, e = self._start[row], self._start[row + 1]
        ip, rows, weights = self._ip, self._rows, self._weights
        spans = [(ip[t], ip[t + 1]) for t in self._terms[s:e]]
        if not spans:
            return np.zeros(self._n)
        products = [weights[a:b] * w for (a, b), w in zip(spans, self._own[s:e], strict=True)]
        hits = np.concatenate([rows[a:b] for a, b in spans])
        return np.bincount(hits, np.concatenate(products), minlength=self._n)

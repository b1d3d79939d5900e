"""Eager sparse scoring shared by the keyword retrievers (the bm25s design).

Every (term, row) pair gets its final weight when the index is built or loaded. Postings
are stored CSC-style: ``indptr`` (int64, one entry per term plus one), ``rows`` (int32,
ascending within a term), ``tfs`` (counts in the narrowest of uint8, uint16 and int32 that
holds them, see :func:`narrow_counts`; indexes built before hold int32) and ``weights``
(float32); :mod:`ctxselect.retrieve._sparse_arrays` writes, reads and checks them. A query adds
the weight slices of its terms into a float64 accumulator with one ``np.bincount`` and
selects the best k rows; a one-term query ranks its posting slice directly.

Exactness: weights are float32; a score adds those float32 values (times the query
multiplier) as float64, term by term in query order. ``explain`` adds the same float64
values in the same order, so it reproduces ``search``'s score bit for bit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ctxselect.errors import ConfigError, NotFoundError
from ctxselect.retrieve._corpus import Postings, csc_postings, word_pass_of

# The stored form of postings lives in _sparse_arrays; its names stay importable from here.
from ctxselect.retrieve._sparse_arrays import decode_vocab as decode_vocab
from ctxselect.retrieve._sparse_arrays import encode_vocab, narrow_counts
from ctxselect.retrieve._sparse_arrays import postings_from_arrays as postings_from_arrays
from ctxselect.retrieve._sparse_arrays import raw_arrays as raw_arrays
from ctxselect.retrieve._sparse_arrays import raw_postings as raw_postings
from ctxselect.retrieve.analyze import Analyzer
from ctxselect.retrieve.filters import RowMask, keep_rows, mask_scores
from ctxselect.types import Explanation, Hit, Rows, TermExplanation

_MAX_WORD_CACHE = 2_000_000

QueryTerms = tuple[list[int], list[float] | None]
"""Term ids of a query (deduplicated, first occurrence first) and their multipliers
(None: every multiplier is 1)."""


def index_corpus(texts: Sequence[str], analyzer: Analyzer) -> Postings:
    """Analyze every text once and return its postings, sorted by term then row.

    Each distinct word is mapped to a term once (stemming the whole vocabulary in one
    call, as bm25s does); the vocabulary is sorted so term ids are reproducible. Texts
    with a ``memo`` dict (``ctxselect.index.writer.SharedTexts``) let modes whose words
    derive from the same base words share one pass (see ``ctxselect.retrieve._corpus``).
    """
    built = csc_postings(word_pass_of(texts, analyzer), analyzer, len(texts))
    word_terms = built.word_terms if len(built.word_terms) <= _MAX_WORD_CACHE else {}
    return built._replace(tfs=narrow_counts(built.tfs), word_terms=word_terms)


def check_k(k: int) -> None:
    """Raise ConfigError unless ``k`` is a whole number >= 1."""
    if type(k) is int and k >= 1:  # the common case, checked cheaply
        return
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"k (number of hits) must be a whole number >= 1, got {k!r}")


def top_dense(scores: np.ndarray, k: int) -> tuple[list[int], list[float]]:
    """Return the best ``k`` positive entries of ``scores``: ties by position, zeros out.

    Selection runs on the positive entries only: ``np.partition`` over an array that is
    mostly zeros is several times slower than over its few distinct positive values.
    (ndarray methods rather than ``np.`` functions: this runs once per query.)
    """
    rows = (scores > 0).nonzero()[0]  # flatnonzero of the floats themselves is slower
    values = scores[rows]
    m = len(values)
    if m > k:
        kth = np.partition(values, m - k)[m - k]
        keep = (values >= kth).nonzero()[0]
        rows, values = rows[keep], values[keep]
    order = (-values).argsort(kind="stable")[:k]
    return rows[order].tolist(), values[order].tolist()


def top_slice(rows: np.ndarray, values: np.ndarray, k: int) -> tuple[list[int], list[float]]:
    """Rank one posting slice (rows ascending, distinct): best ``k``, ties by row."""
    m = len(values)
    if m > k:
        kth = np.partition(values, m - k)[m - k]
        keep = (values >= kth).nonzero()[0]
        rows, values = rows[keep], values[keep]
    order = (-values).argsort(kind="stable")[:k]
    out_rows, out_values = rows[order].tolist(), values[order].tolist()
    while out_values and out_values[-1] <= 0.0:
        out_rows.pop()
        out_values.pop()
    return out_rows, out_values


class SparseRetriever:
    """Search, search_many and explanation plumbing over precomputed term weights.

    Subclasses set ``mode``, build the weights, and turn a query into term ids with
    multipliers (:meth:`_query`); everything else is shared.
    """

    mode = ""

    def __init__(
        self, table: Rows, analyzer: Analyzer, postings: Postings, weights: np.ndarray
    ) -> None:
        self.table = table
        self.analyzer = analyzer
        self.postings = postings
        self._n = len(table)
        self._vocab = postings.vocab
        self._term_id = {t: i for i, t in enumerate(postings.vocab)}
        self._ip: list[int] = postings.indptr.tolist()
        self._rows = postings.rows
        self._weights = np.ascontiguousarray(weights, dtype=np.float32)
        self._word_terms = dict(postings.word_terms)
        self._hit = table.hit

    # -- query analysis ----------------------------------------------------------------

    def _term_ids(self, query: str) -> list[int]:
        """Return the known term ids of ``query``'s words, in order, repeats kept."""
        words = self.analyzer.words(query)
        ids = list(map(self._word_terms.get, words))
        if None in ids:
            return [t for t in self._learn(words, ids) if t >= 0]
        return [t for t in ids if t >= 0]  # type: ignore[operator, misc]  # no None left

    def _learn(self, words: list[str], ids: list[int | None]) -> list[int]:
        """Fill in the ids of words not seen before (-1: dropped or not in the index).

        The cache is replaced, never cleared, when full, so a concurrent search holding
        the old dict still finds every word it looked up.
        """
        new = list(dict.fromkeys(w for w, t in zip(words, ids, strict=True) if t is None))
        get = self._term_id.get
        learned = {
            w: (-1 if term is None else get(term, -1))
            for w, term in zip(new, self.analyzer.map_words(new), strict=True)
        }
        cache = self._word_terms
        if len(cache) + len(learned) > _MAX_WORD_CACHE:
            cache = self._word_terms = {}
        cache.update(learned)
        return [learned[w] if t is None else t for w, t in zip(words, ids, strict=True)]

    def _query(self, query: str) -> QueryTerms:
        """Return the query's term ids and multipliers (see :data:`QueryTerms`)."""
        raise NotImplementedError

    # -- search ------------------------------------------------------------------------

    def _ranked(
        self, terms: QueryTerms, k: int, mask: RowMask | None = None
    ) -> tuple[list[int], list[float]]:
        """Score the rows for one analyzed query and return the best ``k`` (of the rows
        ``mask`` allows)."""
        tids, mults = terms
        ip, rows, weights = self._ip, self._rows, self._weights
        if len(tids) == 1:
            s, e = ip[tids[0]], ip[tids[0] + 1]
            values: np.ndarray = weights[s:e]
            if mults is not None:
                values = values.astype(np.float64) * mults[0]
            if mask is not None:
                mask.check(self._n)
            return top_slice(*keep_rows(rows[s:e], values, mask), k)
        row_parts = []
        w_parts: list[np.ndarray] = []
        for j, t in enumerate(tids):
            s, e = ip[t], ip[t + 1]
            row_parts.append(rows[s:e])
            w_parts.append(
                weights[s:e] if mults is None else weights[s:e].astype(np.float64) * mults[j]
            )
        scores = np.bincount(np.concatenate(row_parts), np.concatenate(w_parts), minlength=self._n)
        return top_dense(mask_scores(scores, mask), k)

    def ranked(
        self, query: str, k: int, mask: RowMask | None = None
    ) -> tuple[list[int], list[float]]:
        """Return the rows and scores :meth:`search` ranks, without making Hits."""
        check_k(k)
        terms = self._query(query)
        return self._ranked(terms, k, mask) if terms[0] else ([], [])

    def search(self, query: str, k: int = 10, *, mask: RowMask | None = None) -> list[Hit]:
        """Return the ``k`` best chunks for ``query``: best first, ties by chunk_id; only
        rows ``mask`` allows (default: all)."""
        rows, scores = self.ranked(query, k, mask)
        return list(map(self._hit, rows, range(1, len(rows) + 1), scores))

    def search_many(
        self, queries: Mapping[str, str], k: int = 10, *, mask: RowMask | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}``, the same as :meth:`search` on each query.

        A plain loop over the single-query path: a batched (queries x chunks) ``bincount``
        was measured no faster, since selecting the top rows and making Hits dominate.
        """
        check_k(k)
        hit = self._hit
        out: dict[str, list[Hit]] = {}
        for qid, query in queries.items():
            terms = self._query(query)
            rows, scores = self._ranked(terms, k, mask) if terms[0] else ([], [])
            out[qid] = list(map(hit, rows, range(1, len(rows) + 1), scores))
        return out

    # -- explanation helpers -----------------------------------------------------------

    def _row(self, chunk_id: str) -> int:
        """Return the table row of ``chunk_id`` or raise NotFoundError."""
        row = self.table.row_of.get(chunk_id)
        if row is None:
            raise NotFoundError(
                f"chunk {chunk_id!r} is not in this index ({self._n} chunks): use a "
                f"chunk_id returned by search"
            )
        return row

    def _posting(self, tid: int, row: int) -> tuple[int, float]:
        """Return (tf, stored weight) of term ``tid`` in ``row``, or (0, 0.0)."""
        s, e = self._ip[tid], self._ip[tid + 1]
        i = s + int(np.searchsorted(self._rows[s:e], row))
        if i < e and int(self._rows[i]) == row:
            return int(self.postings.tfs[i]), float(self._weights[i])
        return 0, 0.0

    def _df(self, tid: int) -> int:
        """Return the number of rows that contain term ``tid``."""
        return self._ip[tid + 1] - self._ip[tid]

    def arrays(self) -> dict[str, np.ndarray]:
        """The index artefacts to persist (each mode adds its own to the postings)."""
        raise NotImplementedError

    # -- hooks for searching across segments (ctxselect.retrieve.segments) -------------

    exact_live = False
    """True when :meth:`live_weights` recomputes weights exactly as a rebuild would."""

    def idf_of(self, df: np.ndarray, n: int) -> np.ndarray:
        """Return the mode's idf of every term with document frequency ``df`` among ``n``."""
        raise NotImplementedError

    def live_weights(
        self, tfs: np.ndarray, dl: np.ndarray, idf: np.ndarray | np.floating, avgdl: float
    ) -> np.ndarray:
        """Return float32 weights of postings, computed exactly as a rebuild computes them.

        ``dl`` is each posting's row length, ``idf`` its term's idf (live statistics).
        """
        raise NotImplementedError

    def row_factors(
        self,
        tfs: np.ndarray,
        lengths: np.ndarray,
        rows: np.ndarray,
        idf: np.ndarray,
        avgdl: float,
    ) -> np.ndarray:
        """Return each posting's weight divided by its term's idf (float64).

        ``lengths`` are per row, ``rows`` index them, ``idf`` is per posting; ``avgdl``
        is the mean row length to normalise with (BM25 only).
        """
        raise NotImplementedError

    def query_weights(
        self, terms: list[str], tid_of: Mapping[str, int], idf: np.ndarray
    ) -> QueryTerms:
        """Turn analyzed query ``terms`` into term ids and query-side multipliers.

        ``tid_of`` maps the terms that occur in live rows to ids that index ``idf``.
        """
        raise NotImplementedError

    def _base_arrays(self) -> dict[str, np.ndarray]:
        """The arrays every sparse retriever persists."""
        p = self.postings
        return {
            "vocab": encode_vocab(p.vocab),
            "indptr": p.indptr,
            "rows": p.rows,
            "tfs": p.tfs,
            "lengths": p.lengths,
            "weights": self._weights,
        }


def dedupe(tids: list[int]) -> QueryTerms:
    """Collapse repeated term ids into first-occurrence order with counts as multipliers."""
    if len(tids) < 2 or len(set(tids)) == len(tids):
        return tids, None
    counts: dict[int, int] = {}
    for t in tids:
        counts[t] = counts.get(t, 0) + 1
    return list(counts), [float(c) for c in counts.values()]


def explain_terms(
    query: str,
    chunk_id: str,
    mode: str,
    terms: Iterable[str],
    term_id: Mapping[str, int],
    part: Callable[[str, int], TermExplanation],
    note: str,
    forms: Mapping[str, Sequence[str]] | None = None,
) -> Explanation:
    """Take a keyword score apart: one entry per distinct query term, in query order.

    A term the index does not hold (absent from ``term_id``) contributes nothing; ``part``
    explains the others from the term and its id. The score adds the contributions in
    query order, as a search adds the weights, so it equals the search's score exactly.
    ``forms`` (an index with identifier parts) gives the forms each term takes in the
    chunk: whole word, whole identifier or part of one; they become each entry's ``form``.
    """
    parts = [
        TermExplanation(term, 0.0, 0, 0.0, 0.0) if tid is None else part(term, tid)
        for term, tid in ((t, term_id.get(t)) for t in terms)
    ]
    if forms is not None:
        parts = [dataclasses.replace(p, form=form_text(forms.get(p.term, ()))) for p in parts]
    return Explanation(
        query=query,
        chunk_id=chunk_id,
        mode=mode,
        score=add_in_order(p.contribution for p in parts),
        terms=tuple(parts),
        note=note,
    )


def form_text(forms: Sequence[str], shown: int = 3) -> str:
    """Join the forms a term takes in a chunk, the first ``shown`` of them, with ``"; "``."""
    more = len(forms) - shown
    return "; ".join(forms[:shown]) + (f"; and {more} more" if more > 0 else "")


def add_in_order(values: Iterable[float]) -> float:
    """Add floats left to right as ``bincount`` does (``sum`` compensates on Python 3.12+)."""
    total = 0.0
    for v in values:
        total += v
    return total

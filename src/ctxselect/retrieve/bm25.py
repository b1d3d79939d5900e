"""BM25 over chunk rows, Lucene variant, scored eagerly as bm25s does.

BM25 variant: Lucene >= 8 (as bm25s ``method="lucene"``; Kamphuis et al., ECIR 2020):
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` and a term scores
``idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))``, without the constant ``(k1 + 1)``
factor of the classic formula (it scales every score alike, so ranking is unchanged).
``dl`` is the number of analyzed terms of the chunk's indexed text (header + text).
A word repeated in the query counts once per occurrence, as in bm25s (that is what makes
our nDCG match it).

With ``identifiers`` (:class:`BM25Params`), the index side also holds the parts of each
identifier (``parseHttpHeader`` -> ``parse http header``) next to the whole one; queries are
analyzed plainly. Measured (docs/05-retrieval.md): splitting query words too cost SciFact
0.005 nDCG@10, splitting only the indexed text changed SciFact and NFCorpus by < 0.001.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from ctxselect.config import BM25Params
from ctxselect.errors import ConfigError, IndexCorruptError, IndexMismatchError
from ctxselect.retrieve._sparse import (
    Postings,
    QueryTerms,
    SparseRetriever,
    dedupe,
    explain_terms,
    index_corpus,
    postings_from_arrays,
    raw_arrays,
)
from ctxselect.retrieve.analyze import BM25Analyzer
from ctxselect.types import ChunkTable, Explanation, Rows, TermExplanation

_FIELDS = tuple(f.name for f in dataclasses.fields(BM25Params))


def bm25_params(params: BM25Params | None = None, **fields: Any) -> BM25Params:
    """Return ``params`` (default ``BM25Params()``) with ``fields`` overriding it."""
    unknown = sorted(set(fields) - set(_FIELDS))
    if unknown:
        raise ConfigError(
            f"unknown BM25 parameter(s) {', '.join(unknown)}: choose from {', '.join(_FIELDS)}"
        )
    if params is not None and not isinstance(params, BM25Params):
        raise ConfigError(f"params must be a BM25Params, got {type(params).__name__}")
    return dataclasses.replace(params or BM25Params(), **fields)


def analyzer_of(params: BM25Params) -> BM25Analyzer:
    """Return the analyzer of the indexed text of an index built with ``params``."""
    return BM25Analyzer(
        stem=params.stem, stopwords=params.stopwords, identifiers=params.identifiers
    )


def bm25_idf(df: int, n: int) -> float:
    """Lucene's BM25 idf, always positive: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log1p((n - df + 0.5) / (df + 0.5))


def bm25_idfs(df: np.ndarray, n: int) -> np.ndarray:
    """:func:`bm25_idf` of every entry of ``df`` at once."""
    return np.log1p((n - df + 0.5) / (df + 0.5))


def _norms(lengths: np.ndarray, avgdl: float, params: BM25Params) -> np.ndarray:
    """Each row's ``k1 * (1 - b + b * dl / avgdl)``."""
    dl = lengths.astype(np.float64)
    return params.k1 * (1.0 - params.b + params.b * dl / avgdl) if avgdl > 0 else dl


def bm25_weights(postings: Postings, params: BM25Params) -> np.ndarray:
    """Compute every (term, row) BM25 weight, in float64, in posting order."""
    n = len(postings.lengths)
    df = np.diff(postings.indptr)
    idf = bm25_idfs(df, n)
    avgdl = float(postings.lengths.astype(np.float64).mean()) if n else 0.0
    norm = _norms(postings.lengths, avgdl, params)
    # idf x tf / (tf + norm), in place: posting-sized float64 temporaries were a large
    # part of a build's memory peak (the same operations, so the same bits)
    tf = postings.tfs.astype(np.float64)
    weights = np.repeat(idf, df)
    weights *= tf
    tf += norm[postings.rows]
    weights /= tf
    return weights


def bm25_arrays(postings: Postings, params: BM25Params) -> dict[str, np.ndarray]:
    """The arrays :meth:`BM25Retriever.arrays` returns, straight from postings."""
    return {
        **raw_arrays(postings),
        "weights": bm25_weights(postings, params).astype(np.float32),
        "params": params_array(params),
    }


def params_array(params: BM25Params) -> np.ndarray:
    """The stored ``params`` array: k1, b, stem, stopwords, identifiers (since identifiers;
    an array of four, written before, means no identifier parts)."""
    flags = [float(params.stem), float(params.stopwords), float(params.identifiers)]
    return np.array([params.k1, params.b, *flags])


class BM25Retriever(SparseRetriever):
    """Lucene-style BM25 over a :class:`ChunkTable`, with bm25s's analysis.

    Weights are precomputed per (term, row) and stored as float32; scores sum them in
    float64 (see ``ctxselect.retrieve._sparse``), so ``explain`` matches ``search`` exactly.
    """

    mode = "bm25"

    def __init__(
        self,
        table: Rows,
        postings: Postings,
        params: BM25Params,
        weights: np.ndarray | None = None,
    ) -> None:
        # queries are analyzed plainly: identifier parts are an index-side expansion
        analyzer = BM25Analyzer(stem=params.stem, stopwords=params.stopwords)
        if weights is None:
            weights = bm25_weights(postings, params)
        super().__init__(table, analyzer, postings, weights)
        self.params = params
        self.index_analyzer = analyzer_of(params)

    @classmethod
    def build(
        cls, table: ChunkTable, params: BM25Params | None = None, **fields: Any
    ) -> BM25Retriever:
        """Analyze every chunk of ``table`` and build the index.

        Args:
            table: The chunks; each is indexed as ``table.indexed_text(row)``.
            params: BM25 settings (default ``BM25Params()``).
            **fields: Overrides of single settings: ``k1``, ``b``, ``stem``, ``stopwords``,
                ``identifiers``.
        """
        p = bm25_params(params, **fields)
        analyzer = analyzer_of(p)
        texts = [table.indexed_text(row) for row in range(len(table))]
        return cls(table, index_corpus(texts, analyzer), p)

    @classmethod
    def analysis(cls, params: BM25Params | None = None, **fields: Any) -> tuple[str, BM25Analyzer]:
        """Return the analyzer the index uses and a key naming it (equal keys: same terms)."""
        p = bm25_params(params, **fields)
        key = f"bm25:stem={int(p.stem)}:stopwords={int(p.stopwords)}"
        key += ":identifiers=1" if p.identifiers else ""  # keys written before stay equal
        return key, analyzer_of(p)

    @classmethod
    def arrays_from_postings(
        cls, postings: Postings, params: BM25Params | None = None, **fields: Any
    ) -> dict[str, np.ndarray]:
        """Return the stored arrays for ``postings``, as ``build(...).arrays()`` would."""
        return bm25_arrays(postings, bm25_params(params, **fields))

    @classmethod
    def load(
        cls,
        table: Rows,
        arrays: Mapping[str, np.ndarray],
        params: BM25Params | None = None,
        **fields: Any,
    ) -> BM25Retriever:
        """Rebuild the retriever from :meth:`arrays` without re-analyzing the corpus.

        ``k1`` and ``b`` may differ from the ones the index was built with (weights are
        recomputed from the stored term counts); ``stem``, ``stopwords`` and
        ``identifiers`` may not.
        """
        p = bm25_params(params, **fields)
        if "params" not in arrays or len(arrays["params"]) not in (4, 5):
            raise IndexCorruptError("the bm25 index lacks the array params: rebuild the index")
        k1, b, *flags = (float(x) for x in arrays["params"])
        built = tuple(bool(f) for f in [*flags, 0.0][:3])  # 4 values: before identifiers
        asked = (p.stem, p.stopwords, p.identifiers)
        if built != asked:
            names = ("stem", "stopwords", "identifiers")
            raise IndexMismatchError(
                f"the bm25 index was built with "
                f"{', '.join(f'{n}={v}' for n, v in zip(names, built, strict=True))} but "
                f"{', '.join(f'{n}={v}' for n, v in zip(names, asked, strict=True))} was "
                f"asked for: rebuild the index"
            )
        postings = postings_from_arrays(arrays, table, "bm25")
        same = (k1, b) == (p.k1, p.b)
        return cls(table, postings, p, np.asarray(arrays["weights"]) if same else None)

    def arrays(self) -> dict[str, np.ndarray]:
        """Vocabulary (UTF-8, newline-joined), CSC postings, lengths, weights, params."""
        p = self.params
        out = self._base_arrays()
        out["params"] = params_array(p)
        return out

    def _query(self, query: str) -> QueryTerms:
        return dedupe(self._term_ids(query))

    def idf_of(self, df: np.ndarray, n: int) -> np.ndarray:
        """Lucene's BM25 idf of every term (see :func:`bm25_idf`)."""
        return bm25_idfs(df, n)

    exact_live = True

    def live_weights(
        self, tfs: np.ndarray, dl: np.ndarray, idf: np.ndarray | np.floating, avgdl: float
    ) -> np.ndarray:
        """:func:`bm25_weights`' formula, term by term, as float32 (bit for bit)."""
        tf = tfs.astype(np.float64)
        return (idf * tf / (tf + _norms(dl, avgdl, self.params))).astype(np.float32)

    def query_weights(
        self, terms: list[str], tid_of: Mapping[str, int], idf: np.ndarray
    ) -> QueryTerms:
        """Known terms, each once, with its count in the query as the multiplier."""
        return dedupe([tid_of[t] for t in terms if t in tid_of])

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Take ``chunk_id``'s BM25 score for ``query`` apart, one entry per query term.

        Contributions are the stored float32 weights times the term's count in the query;
        they add up (in query order) to exactly the score :meth:`search` reports.
        """
        row = self._row(chunk_id)
        count = Counter(self.analyzer.terms(query))

        def part(term: str, tid: int) -> TermExplanation:
            tf, weight = self._posting(tid, row)
            df = self._df(tid)
            return TermExplanation(term, float(tf), df, bm25_idf(df, self._n), weight * count[term])

        note = self._note(row)
        forms = self.forms_in(self.table, row)
        return explain_terms(query, chunk_id, self.mode, count, self._term_id, part, note, forms)

    def forms_in(self, table: Rows, row: int) -> dict[str, list[str]] | None:
        """The forms each term takes in the indexed text of ``table``'s ``row`` (None: the
        index holds no identifier parts)."""
        if not self.params.identifiers:
            return None
        hit = table.hit(row, 1, 0.0)
        text = f"{hit.header}\n{hit.text}" if hit.header else hit.text
        return self.index_analyzer.forms(text)

    def _note(self, row: int) -> str:
        lengths = self.postings.lengths
        avgdl = float(lengths.mean()) if len(lengths) else 0.0
        p = self.params
        return (
            f"BM25 (Lucene >= 8, no (k1+1) factor): contribution = query count * idf * tf / "
            f"(tf + k1*(1 - b + b*dl/avgdl)) with k1={p.k1}, b={p.b}, dl={int(lengths[row])}, "
            f"avgdl={avgdl:.4f}, N={self._n}; idf = ln(1 + (N - df + 0.5)/(df + 0.5)); "
            f"weights stored as float32, summed as float64; terms with df=0 are not in the "
            f"index"
        )

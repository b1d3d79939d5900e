"""Search a keyword index stored as a base segment plus delta segments and deletions.

An update writes the postings of its new chunks as a small delta segment and marks the
rows it replaces or deletes as dead; compaction later merges everything into one base.
Between the two, :class:`SegmentedRetriever` scores the base, the deltas' raw postings
and skips dead rows, with the statistics of the live rows: ``N`` and every document
frequency are exact (dead rows' terms are subtracted), and so is BM25's avgdl (lengths
are integers: their sum, hence the mean, does not depend on row order).

- ``bm25`` and ``tfidf-sum`` recompute the weights of the query's terms from stored
  term counts and lengths, exactly as a rebuild computes them (same float operations,
  same float32 rounding): results equal a rebuild's at all times, bit for bit. The cost
  is some numpy work per query term until the next compaction.
- ``tfidf`` (cosine) rescales stored base weights to the live idf, but a base row keeps
  its vector length from the last compaction (recomputing it needs every term of the
  row); delta rows are exact. Same chunks match as in a rebuild; scores can differ.

Ties break on ``chunk_id``, as in a rebuild, across segments too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ctxselect.errors import CtxselectError, IndexCorruptError, NotFoundError
from ctxselect.retrieve._sparse import (
    SparseRetriever,
    check_k,
    decode_vocab,
    explain_terms,
)
from ctxselect.retrieve.base import Retriever, RetrieverClass
from ctxselect.retrieve.filters import RowMask, mask_scores
from ctxselect.types import Explanation, Hit, Rows, Segments, TermExplanation

_CACHE_POSTINGS = 8_000_000  # live weights kept per generation: 32 MB of float32 at most


class _Prefix:
    """The first ``n`` rows of a row source: what the base segment's retriever sees."""

    def __init__(self, rows: Rows, n: int) -> None:
        self._rows = rows
        self._n = n
        self.chunk_ids = rows.chunk_ids
        self.row_of = rows.row_of
        self.hit = rows.hit

    def __len__(self) -> int:
        return self._n


def load_segments(
    retriever: RetrieverClass, rows: Rows, segments: Segments, **params: Any
) -> Retriever:
    """Load a keyword mode's ``retriever`` over ``rows`` from a base segment and its changes.

    A compacted index loads exactly as a rebuilt one (the base alone, its own fast path).

    Raises:
        IndexCorruptError: The arrays cannot be read as the mode's index (damage that
            the store's checksums did not cover: an index written without them).
    """
    try:
        return _load_segments(retriever, rows, segments, **params)
    except CtxselectError:
        raise
    except (UnicodeDecodeError, IndexError, ValueError, TypeError) as exc:
        raise IndexCorruptError(
            f"the {retriever.mode} index is damaged ({type(exc).__name__}: {exc}): run "
            f"`ctxselect verify`, then rebuild it in place with `ctxselect index --rebuild "
            f"--index DIR`"
        ) from exc


def _load_segments(cls: RetrieverClass, rows: Rows, segments: Segments, **params: Any) -> Retriever:
    if segments.compacted:
        return cls.load(rows, segments.base, **params)
    n_base = len(segments.base["lengths"]) if "lengths" in segments.base else 0
    base = cls.load(_Prefix(rows, n_base), segments.base, **params)
    if not isinstance(base, SparseRetriever):
        raise NotImplementedError(f"mode {cls.mode!r} cannot be searched across segments")
    return SegmentedRetriever(base, rows, segments)


def length_drift(segments: Segments) -> float:
    """Return ``|avgdl_live / avgdl_base - 1|``: how far BM25's length statistic has moved.

    Before compaction every BM25 score is within this relative distance of a rebuild's
    (see the module docstring); 0.0 when compacted.
    """
    if segments.compacted:
        return 0.0
    base = np.asarray(segments.base.get("lengths", np.zeros(0)), dtype=np.int64)
    deltas = [np.asarray(d["lengths"], dtype=np.int64) for d in segments.deltas]
    every = np.concatenate([base, *deltas]) if deltas else base
    dead = segments.dead if segments.dead is not None else np.zeros(0, np.int64)
    n_live = len(every) - len(dead)
    if not len(base) or not n_live or not base.sum():
        return 0.0
    live_mean = (float(every.sum()) - float(every[dead].sum())) / n_live
    return abs(live_mean / float(base.mean()) - 1.0)


def _live_avgdl(base: np.ndarray, deltas: np.ndarray, dead: np.ndarray, n_live: int) -> float:
    """The mean length of the live rows, bit for bit as a rebuild's ``lengths.mean()``.

    Lengths are integers, so every partial sum is exact in float64 and the order of the
    rows does not matter: the mean is the same single division.
    """
    total = int(base.sum(dtype=np.int64)) + int(deltas.sum(dtype=np.int64))
    n0 = len(base)
    gone = dead[dead < n0]
    total -= int(base[gone].sum(dtype=np.int64)) + int(deltas[dead[dead >= n0] - n0].sum())
    return total / n_live if n_live else 0.0


class _Terms(Mapping[str, int]):
    """Term -> overlay id for terms that occur in live rows: base ids, then new terms."""

    def __init__(self, base: Mapping[str, int], extra: dict[str, int], df: np.ndarray) -> None:
        self._base = base
        self._extra = extra
        self._df = df

    def get(self, term: str, default: Any = None) -> Any:
        tid = self._base.get(term)
        if tid is None:
            tid = self._extra.get(term)
        return tid if tid is not None and self._df[tid] > 0 else default

    def __getitem__(self, term: str) -> int:
        tid = self.get(term)
        if tid is None:
            raise KeyError(term)
        return int(tid)

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def __iter__(self) -> Iterator[str]:
        return (t for t in itertools.chain(self._base, self._extra) if t in self)

    def __len__(self) -> int:
        return int((self._df > 0).sum())


class _Deltas:
    """Every delta segment's postings merged into one CSC over overlay term ids.

    Overlay ids are the base's term ids, then ids for terms the base lacks (``extra``).
    """

    def __init__(self, segments: Segments, n_base: int, base_ids: Mapping[str, int]) -> None:
        self.extra: dict[str, int] = {}
        v0 = len(base_ids)
        tids, grows, tfs, lengths = [], [], [], []
        offset = n_base
        for delta in segments.deltas:
            local = np.fromiter(
                (self._id(t, base_ids, v0) for t in decode_vocab(delta["vocab"])), np.int64
            )
            counts = np.diff(np.asarray(delta["indptr"], dtype=np.int64)).astype(np.int64)
            tids.append(np.repeat(local, counts))
            grows.append(np.asarray(delta["rows"], dtype=np.int64) + offset)
            tfs.append(np.asarray(delta["tfs"], dtype=np.int32))
            lengths.append(np.asarray(delta["lengths"], dtype=np.int32))
            offset += len(lengths[-1])
        self.n_total = offset
        self.n_terms = v0 + len(self.extra)
        tid = np.concatenate(tids) if tids else np.zeros(0, np.int64)
        grow = np.concatenate(grows) if grows else np.zeros(0, np.int64)
        order = np.lexsort((grow, tid))
        self.tids = tid[order]
        self.rows = grow[order].astype(np.int32)
        self.tfs = (np.concatenate(tfs) if tfs else np.zeros(0, np.int32))[order]
        self.lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int32)
        cuts = np.flatnonzero(np.diff(self.tids)) + 1
        starts = np.concatenate(([0], cuts)).astype(np.int64)
        ends = np.concatenate((cuts, [len(self.tids)])).astype(np.int64)
        if not len(self.tids):
            starts = ends = np.zeros(0, np.int64)
        firsts = self.tids[starts].tolist()
        self.slices = dict(
            zip(firsts, zip(starts.tolist(), ends.tolist(), strict=True), strict=True)
        )

    def _id(self, term: str, base_ids: Mapping[str, int], v0: int) -> int:
        tid = base_ids.get(term)
        if tid is None:
            tid = self.extra.setdefault(term, v0 + len(self.extra))
        return tid


class SegmentedRetriever:
    """A base retriever plus delta segments and dead rows, scored with live statistics."""

    def __init__(self, base: SparseRetriever, rows: Rows, segments: Segments) -> None:
        self.mode = base.mode
        self.base = base
        self.table = rows
        self._n_base = n0 = base._n
        v0 = len(base._vocab)
        deltas = _Deltas(segments, n0, base._term_id)
        self._d = deltas
        self._n = deltas.n_total
        dead = segments.dead if segments.dead is not None else np.zeros(0, np.int64)
        self._dead = np.asarray(dead, dtype=np.int64)
        self._dead_set = frozenset(self._dead.tolist())
        df_base = np.diff(base.postings.indptr)
        df = np.bincount(deltas.tids, minlength=deltas.n_terms).astype(np.int64)
        df[:v0] += df_base
        for term, count in segments.dead_terms.items():
            tid = base._term_id.get(term, deltas.extra.get(term))
            if tid is not None:
                df[tid] -= count
        self._df = df
        self._n_live = self._n - len(self._dead)
        self._idf = base.idf_of(df, self._n_live)
        self._live = _Terms(base._term_id, deltas.extra, df)
        self._lengths = base.postings.lengths
        self._avgdl = _live_avgdl(self._lengths, deltas.lengths, self._dead, self._n_live)
        idf_of_posting = self._idf[deltas.tids]
        local = deltas.rows.astype(np.int64) - n0
        if base.exact_live:  # weights exactly as a rebuild computes them, from live statistics
            self._d_weights = base.live_weights(
                deltas.tfs, deltas.lengths[local], idf_of_posting, self._avgdl
            )
        else:  # cosine: base rows keep their vector lengths until compaction
            g = base.row_factors(deltas.tfs, deltas.lengths, local, idf_of_posting, self._avgdl)
            self._d_weights = (g * idf_of_posting).astype(np.float32)
            idf_ref = base.idf_of(df_base, n0)
            safe = np.where(idf_ref > 0, idf_ref, 1.0)
            # NaN marks a base idf of 0 (weights stored as 0): such terms use tfs.
            self._ratio = np.where(idf_ref > 0, self._idf[:v0] / safe, np.nan)
        self._base_g: np.ndarray | None = None
        self._cache: dict[int, np.ndarray] = {}
        self._cached = 0

    def _remember(self, tid: int, weights: np.ndarray) -> None:
        """Keep a term's live base weights for this generation (bounded; replaced when full,
        never cleared in place, so a concurrent search keeps the dict it holds)."""
        if self._cached + len(weights) > _CACHE_POSTINGS:
            self._cache, self._cached = {}, 0
        self._cache[tid] = weights
        self._cached += len(weights)

    # -- scoring -----------------------------------------------------------------------

    def _query(self, query: str) -> tuple[list[int], list[float] | None]:
        terms = self.base.analyzer.terms(query)
        return self.base.query_weights(terms, self._live, self._idf)

    def _base_part(self, tid: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows and float32 weights of term ``tid`` in the base segment (None: absent)."""
        b = self.base
        if tid >= len(b._ip) - 1:
            return None
        s, e = b._ip[tid], b._ip[tid + 1]
        if s == e:
            return None
        rows = b._rows[s:e]
        if b.exact_live:
            cached = self._cache.get(tid)
            if cached is None:
                tfs, dl = b.postings.tfs[s:e], self._lengths[rows]
                cached = b.live_weights(tfs, dl, self._idf[tid], self._avgdl)
                self._remember(tid, cached)
            return rows, cached
        ratio = float(self._ratio[tid])
        if ratio == ratio:  # not NaN: the stored weight rescaled to the live idf
            return rows, b._weights[s:e].astype(np.float64) * ratio
        return rows, self._base_factors()[s:e] * float(self._idf[tid])

    def _base_factors(self) -> np.ndarray:
        """Cosine row factors of every base posting under the live idf, for terms whose
        base idf was 0 (stored weights 0). Rare: such a term was in every base row."""
        if self._base_g is None:
            p = self.base.postings
            live = np.repeat(self._idf[: len(p.indptr) - 1], np.diff(p.indptr).astype(np.int64))
            rows = p.rows.astype(np.int64)
            self._base_g = self.base.row_factors(p.tfs, p.lengths, rows, live, self._avgdl)
        return self._base_g

    def _parts(self, tid: int, m: float | None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Rows and contributions of one query term; ``m`` None: the weights as stored."""
        parts = []
        base = self._base_part(tid)
        if base is not None:
            parts.append(base)
        span = self._d.slices.get(tid)
        if span is not None:
            s, e = span
            parts.append((self._d.rows[s:e], self._d_weights[s:e]))
        if m is None:
            return parts
        return [(r, w.astype(np.float64) * m) for r, w in parts]  # as the base path does

    def _ranked(
        self, tids: list[int], mults: list[float] | None, k: int, mask: RowMask | None = None
    ) -> tuple[list[int], list[float]]:
        ms: list[float | None] = list(mults) if mults is not None else [None] * len(tids)
        parts = [p for tid, m in zip(tids, ms, strict=True) for p in self._parts(tid, m)]
        if not parts:
            return [], []
        rows = np.concatenate([r for r, _ in parts])
        weights = np.concatenate([w for _, w in parts])
        scores = np.bincount(rows, weights, minlength=self._n)
        if len(self._dead):
            scores[self._dead] = 0.0
        return self._top(mask_scores(scores, mask), k)

    def _top(self, scores: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        """The best ``k`` positive rows, ties broken on chunk_id across segments."""
        rows = (scores > 0).nonzero()[0]
        values = scores[rows]
        if len(values) > k:
            kth = np.partition(values, len(values) - k)[len(values) - k]
            keep = (values >= kth).nonzero()[0]
            rows, values = rows[keep], values[keep]
        if len(np.unique(values)) == len(values):
            order = (-values).argsort(kind="stable")[:k]
            return rows[order].tolist(), values[order].tolist()
        ids = self.table.chunk_ids
        ranked = sorted(
            zip(values.tolist(), rows.tolist(), strict=True), key=lambda vr: (-vr[0], ids[vr[1]])
        )[:k]
        return [r for _, r in ranked], [v for v, _ in ranked]

    def ranked(
        self, query: str, k: int, mask: RowMask | None = None
    ) -> tuple[list[int], list[float]]:
        """Return the rows and scores :meth:`search` ranks, without making Hits."""
        check_k(k)
        tids, mults = self._query(query)
        return self._ranked(tids, mults, k, mask) if tids else ([], [])

    def search(self, query: str, k: int = 10, *, mask: RowMask | None = None) -> list[Hit]:
        """Return the ``k`` best chunks for ``query``: best first, ties by chunk_id; only
        rows ``mask`` allows (default: all)."""
        rows, scores = self.ranked(query, k, mask)
        return list(map(self.table.hit, rows, range(1, len(rows) + 1), scores))

    def search_many(
        self, queries: Mapping[str, str], k: int = 10, *, mask: RowMask | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}``, the same as :meth:`search` on each query."""
        return {qid: self.search(query, k, mask=mask) for qid, query in queries.items()}

    # -- explanation -------------------------------------------------------------------

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Take the score apart term by term; contributions add up to the search score."""
        row = self.table.row_of.get(chunk_id)
        if row is None or row in self._dead_set:
            raise NotFoundError(
                f"chunk {chunk_id!r} is not in this index ({self._n_live} chunks): use a "
                f"chunk_id returned by search"
            )
        tids, mults = self._query(query)
        weight_of: dict[int, float | None] = dict(
            zip(tids, mults if mults is not None else [None] * len(tids), strict=True)
        )

        def part(term: str, tid: int) -> TermExplanation:
            df, idf = int(self._df[tid]), float(self._idf[tid])
            if tid not in weight_of:  # known but left out of the query (idf 0)
                return TermExplanation(term, self._tf(tid, row), df, idf, 0.0)
            tf, contribution = self._term_in_row(tid, weight_of[tid], row)
            return TermExplanation(term, tf, df, idf, contribution)

        terms = dict.fromkeys(self.base.analyzer.terms(query))
        forms_in = getattr(self.base, "forms_in", None)  # BM25 with identifier parts
        forms = forms_in(self.table, row) if forms_in is not None else None
        note = self._note()
        return explain_terms(query, chunk_id, self.mode, terms, self._live, part, note, forms)

    def _term_in_row(self, tid: int, m: float | None, row: int) -> tuple[float, float]:
        for rows, weights in self._parts(tid, m):
            i = int(np.searchsorted(rows, row))
            if i < len(rows) and int(rows[i]) == row:
                return self._tf(tid, row), float(weights[i])
        return 0.0, 0.0

    def _tf(self, tid: int, row: int) -> float:
        if row < self._n_base:
            return float(self.base._posting(tid, row)[0]) if tid < len(self.base._vocab) else 0.0
        s, e = self._d.slices.get(tid, (0, 0))
        i = s + int(np.searchsorted(self._d.rows[s:e], row))
        return float(self._d.tfs[i]) if i < e and int(self._d.rows[i]) == row else 0.0

    def _note(self) -> str:
        return (
            f"{self.mode} over a base segment, delta segments and {len(self._dead)} deleted "
            f"rows, before compaction: N={self._n_live} and every df are exact (live rows); "
            f"length statistics are the last compaction's (docs/12-updates.md)"
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The base segment's arrays (deltas are stored apart; compaction merges them)."""
        return self.base.arrays()

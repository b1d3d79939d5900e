"""Turn scores into ranked lists, the one ordering every metric here is computed on.

Our convention (house style): best first, higher score is better, ties break on the id
ascending (Python string order, which equals UTF-8 byte order). trec_eval breaks ties
on the docno *descending* instead (``comp_sim_docno`` in trec_eval's form_res_rels.c),
and it holds scores in single precision; so a run with ties must be made strictly
ordered before another tool reads it: :func:`strictly_decreasing` does that while
changing only tied scores, by a few single-precision ulps.
"""

from __future__ import annotations

import heapq
import math
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence

from ctxselect.errors import InputError
from ctxselect.types import Hit, Run


def _order_key(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])


def rank(
    scores: Mapping[str, float], qid: str = "", k: int | None = None
) -> list[tuple[str, float]]:
    """Return ``(id, score)`` pairs best first: score descending, ties by id ascending.

    Args:
        scores: id -> score for one query; higher is better.
        qid: The query the scores belong to, named in error messages.
        k: Keep only the first ``k`` pairs (selected in O(n log k)).

    Raises:
        InputError: A score is NaN, which has no place in an order.
    """
    for doc_id, score in scores.items():
        if math.isnan(score):
            raise InputError(
                f"score of {doc_id!r} for query {qid!r} is NaN: a ranked list needs "
                "comparable scores; drop the document or give it a finite score"
            )
    if k is not None and k < len(scores):
        # ids are unique, so keys never tie and nsmallest equals sorted()[:k]
        return heapq.nsmallest(k, scores.items(), key=_order_key)
    return sorted(scores.items(), key=_order_key)


def ranked_ids(scores: Mapping[str, float], qid: str = "", k: int | None = None) -> list[str]:
    """Return the ids of :func:`rank`, cut to the first ``k`` when ``k`` is given."""
    return [doc_id for doc_id, _ in rank(scores, qid, k)]


def _single(value: float) -> float:
    """Round ``value`` to the nearest C float (IEEE single precision)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        raise InputError(
            f"score {value!r} is beyond single precision (about 3.4e38), which is how "
            "trec_eval stores scores: rescale the scores before writing the run"
        ) from None


def _single_below(value: float) -> float:
    """Return the largest C float strictly below the C float ``value``."""
    if value == 0.0:
        return -float(struct.unpack("<f", struct.pack("<I", 1))[0])
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = bits - 1 if value > 0 else bits + 1  # sign-magnitude: away from zero if < 0
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def in_trec_eval_order(run: Run) -> Run:
    """Re-score a run read from a TREC file so that :func:`rank` orders it as trec_eval
    does: single-precision score descending, ties on the docno descending.

    A run written by another tool may tie; our own tie-break (id ascending) would then
    rank it differently from trec_eval, and metrics at a cut-off would differ. Each
    document's score becomes its position counted from the bottom (n, n - 1, ... 1), so
    only the order is kept: use it for metrics, not to read scores.
    """
    ordered: Run = {}
    for qid, scores in run.items():
        by_docno = sorted(scores.items(), key=lambda item: item[0], reverse=True)
        best_first = sorted(by_docno, key=lambda item: -_single(item[1]))  # stable
        ordered[qid] = {doc: float(len(best_first) - i) for i, (doc, _) in enumerate(best_first)}
    return ordered


def strictly_decreasing(scores: Iterable[float]) -> list[float]:
    """Make best-first scores strictly decreasing as trec_eval reads them.

    trec_eval keeps scores as C ``float`` (``TEXT_RESULTS.sim`` in trec_format.h), so
    two doubles that round to the same single-precision value tie there even when they
    differ here. A score is kept exactly when its single-precision value is below the
    one written before it; otherwise it becomes the next single-precision value below
    that one. Distinct scores thus survive bit for bit, and a run of ``m`` ties (or
    near-ties) loses at most ``m`` single-precision ulps (about 6e-8 relative each).
    The result is strictly decreasing in double and in single precision, so any reader
    that sorts by score alone reproduces the given order.

    Raises:
        InputError: A score is not finite or beyond single precision, or the scores
            are not best first (non-increasing).
    """
    out: list[float] = []
    previous = math.inf  # single-precision value of the last score written
    last_given = math.inf
    for score in scores:
        if not math.isfinite(score):
            raise InputError(
                f"score {score!r} is not finite: trec_eval-style runs need finite "
                "scores; replace it with a low finite value or leave the document out"
            )
        if score > last_given:
            raise InputError(
                f"scores are not best first ({score!r} follows {last_given!r}): "
                "sort the list by score, highest first, before writing it"
            )
        last_given = score
        single = _single(score)
        if single < previous:
            out.append(score)
            previous = single
        else:
            previous = _single_below(previous)
            out.append(previous)
    return out


def collapse_to_docs(ranked: Mapping[str, Sequence[tuple[str, float]]]) -> Run:
    """Turn ranked chunk lists into a document run, keeping each document's best chunk.

    Each query's list holds ``(doc_id, score)`` of its chunks, best first (several chunks
    may share a ``doc_id``). A document's score is that of its first (best-ranked) chunk.
    Where two kept documents tie and our id-ascending tie-break would swap them, the
    later one is moved down by an ulp, so ranking the returned Run gives exactly the
    chunk list's document order.

    Raises:
        InputError: A list is not best first, or holds a NaN or infinite score.
    """
    run: Run = {}
    for qid, hits in ranked.items():
        docs: dict[str, float] = {}
        previous: tuple[str, float] | None = None
        last_given = math.inf
        for doc_id, score in hits:
            if not math.isfinite(score) or score > last_given:
                raise InputError(
                    f"chunk list of query {qid!r} is not best first with finite scores "
                    f"({doc_id!r} scores {score!r} after {last_given!r}): pass hits "
                    "sorted by score, highest first"
                )
            last_given = score
            if doc_id in docs:
                continue
            if previous is not None and _order_key((doc_id, score)) <= _order_key(previous):
                score = math.nextafter(previous[1], -math.inf)
            docs[doc_id] = score
            previous = (doc_id, score)
        run[qid] = docs
    return run


def rank_documents(
    search_many: Callable[[Mapping[str, str], int], Mapping[str, Sequence[Hit]]],
    queries: Mapping[str, str],
    k: int,
) -> dict[str, list[tuple[str, float]]]:
    """Rank documents per query by their best chunk, ``k`` distinct documents deep.

    ``search_many(queries, depth)`` returns ranked chunk hits. Chunks are fetched in
    growing depth until ``k`` distinct documents are found or the ranking runs out, so
    the document ranking is exact however documents are chunked.
    """
    out: dict[str, list[tuple[str, float]]] = {}
    pending = dict(queries)
    depth = 2 * k
    while pending:
        found = search_many(pending, depth)
        for qid in list(pending):
            ranked = found.get(qid, [])
            docs: dict[str, float] = {}
            for hit in ranked:
                docs.setdefault(hit.doc_id, hit.score)
            if len(docs) >= k or len(ranked) < depth:
                out[qid] = list(docs.items())[:k]
                del pending[qid]
        depth *= 4
    return out

"""The candidates fusion tuning chooses among, and their per-query scores.

The grid of fusion specs (RRF k and weight, convex normalisation and weight), simplest
first (:func:`complexity`), and each single retriever alone (:data:`SINGLES`). Each is
scored per query on the same pools (:class:`ctxselect.retrieve.fuse.Pool`), so
:mod:`ctxselect.api.tune` compares them query by query.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from tqdm import tqdm

from ctxselect import eval as _eval
from ctxselect.config import DEFAULT_FUSE_DEPTH, FuseSpec
from ctxselect.retrieve.dense import DenseRetriever
from ctxselect.retrieve.fuse import Pool, fuse_pool
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.types import Qrels, Rows

DEFAULT_METRIC = "ndcg@10"
RRF_KS = (5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
RRF_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
CONVEX_WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))
SINGLES = ("keyword", DenseRetriever.mode)
"""Candidates beside the grid: each side's own ranking alone (report ``mode`` names)."""


def _doc_of(table: Rows) -> Callable[[int], str]:
    """row -> doc_id; a lazily read table is asked per row (pools are small)."""
    doc_ids = getattr(table, "doc_ids", None)
    if doc_ids is not None:
        return doc_ids.__getitem__
    return lambda row: table.hit(row, 0, 0.0).doc_id


def complexity(spec: FuseSpec) -> tuple[float, ...]:
    """Sort key from simplest to most complex: how far ``spec`` is from plain RRF.

    Plain RRF (k = 60, equal weights) first, then RRF by distance of the weight from 0.5,
    then of ``ln(k / 60)``; then convex, ``minmax`` before ``zscore``, each by distance of
    the weight from 0.5 (convex at weight 0 or 1 is nearly one side alone: last).
    """
    if spec.method == "rrf":
        return (0.0, round(abs(spec.weight - 0.5), 6), round(abs(math.log(spec.k / 60.0)), 6))
    return (1.0, float(spec.norm != "minmax"), round(abs(spec.weight - 0.5), 6))


def default_grid(depth: int = DEFAULT_FUSE_DEPTH) -> list[FuseSpec]:
    """Return the specs tuning tries, simplest first (:func:`complexity`): plain RRF first.

    Among specs within one SE of the best, the one-SE rule keeps the earliest, so with
    nothing measurably to gain tuning keeps plain RRF.
    """
    grid = [FuseSpec("rrf", k, weight=w, depth=depth) for k in RRF_KS for w in RRF_WEIGHTS]
    grid += [
        FuseSpec("convex", norm=norm, weight=w, depth=depth)
        for norm in ("minmax", "zscore")
        for w in CONVEX_WEIGHTS
    ]
    return sorted(grid, key=complexity)


def per_query_scores(
    hybrid: HybridRetriever,
    pools: Mapping[str, Pool],
    qrels: Qrels,
    spec: FuseSpec,
    metric: str = DEFAULT_METRIC,
) -> dict[str, float]:
    """Return ``{qid: metric}`` of the documents ranked by fusing ``pools`` with ``spec``.

    A document's score is that of its best chunk (chunk runs are judged as documents).
    """
    doc_of = _doc_of(hybrid.table)
    run: dict[str, dict[str, float]] = {}
    for qid, items in pools.items():
        scores: dict[str, float] = {}
        for row, score in fuse_pool(items, spec):
            scores.setdefault(doc_of(row), score)
        run[qid] = scores
    report = _eval.evaluate(run, qrels, [metric])
    return {qid: values[metric] for qid, values in report.per_query.items()}


def grid_scores(
    hybrid: HybridRetriever,
    found: Mapping[str, Pool],
    qrels: Qrels,
    grid: Sequence[FuseSpec],
    metric: str,
    progress: bool = False,
) -> list[dict[str, float]]:
    """Per-query metric of each spec of ``grid``, in grid order (the slow part of tuning:
    with ``progress``, a bar on stderr counts the specs)."""
    specs = tqdm(grid, desc="tuning fusion", unit="spec", file=sys.stderr, disable=not progress)
    return [per_query_scores(hybrid, found, qrels, spec, metric) for spec in specs]


def single_scores(
    hybrid: HybridRetriever, found: Mapping[str, Pool], qrels: Qrels, metric: str
) -> dict[str, dict[str, float]]:
    """Per-query metric of each side's own ranking alone, keyed by :data:`SINGLES`."""
    doc_of = _doc_of(hybrid.table)
    out = {}
    for side in SINGLES:
        run: dict[str, dict[str, float]] = {}
        for qid, items in found.items():
            ranks = items.keyword_rank if side == "keyword" else items.dense_rank
            listed = np.flatnonzero(ranks > 0)
            order = listed[np.argsort(ranks[listed])]
            run[qid] = {}
            for i, row in enumerate(items.keys[order].tolist()):
                run[qid].setdefault(doc_of(row), float(len(order) - i))
        per_query = _eval.evaluate(run, qrels, [metric]).per_query
        out[side] = {qid: values[metric] for qid, values in per_query.items()}
    return out


def baselines(
    hybrid: HybridRetriever,
    found: Mapping[str, Pool],
    qrels: Qrels,
    metric: str,
    singles: np.ndarray,
) -> dict[str, float]:
    """Untuned means: each side alone (``singles``, rows in :data:`SINGLES` order), plain RRF."""
    out = {side: float(scores.mean()) for side, scores in zip(SINGLES, singles, strict=True)}
    rrf = per_query_scores(hybrid, found, qrels, FuseSpec(depth=_depth(found)), metric)
    out["rrf"] = float(np.mean(list(rrf.values())))
    return out


def _depth(found: Mapping[str, Pool]) -> int:
    return max(
        (
            int(max(p.keyword_rank.max(initial=0), p.dense_rank.max(initial=0)))
            for p in found.values()
        ),
        default=1,
    )

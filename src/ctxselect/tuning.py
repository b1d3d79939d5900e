"""Tune hybrid fusion on labeled queries, with k-fold cross-validation.

The grid covers RRF (k and weight) and convex fusion (normalisation and weight). Every
query is scored by the spec tuned on the *other* folds, so the reported figure is
out-of-sample: it is what tuning on a handful of labeled queries buys on new ones. The
spec returned for use is then tuned on all the labeled queries.

A keyword retriever and a dense retriever are searched once per query, ``spec.depth``
deep, and every spec of the grid fuses those same candidates (fusion costs microseconds;
search does not). :func:`tune_index` does it on a stored index and records the chosen
spec in its manifest, where ``search``, ``select`` and the MCP server read it; :func:`tune`
does it in memory over a :class:`ChunkTable`.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ctxselect import eval as _eval
from ctxselect.api import open_index
from ctxselect.config import DEFAULT_FUSE_DEPTH, DEFAULT_MODE, FuseSpec
from ctxselect.embed import Embedder
from ctxselect.errors import ConfigError, InputError
from ctxselect.retrieve import RETRIEVERS
from ctxselect.retrieve.dense import DenseRetriever, Encoder
from ctxselect.retrieve.fuse import Pool, fuse_pool
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.types import ChunkTable, Qrels, Rows

DEFAULT_METRIC = "ndcg@10"
DEFAULT_FOLDS = 5
RRF_KS = (5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
RRF_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
CONVEX_WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))


@dataclass(frozen=True, slots=True)
class FoldResult:
    """One fold: the spec tuned on the other folds, its train mean and its test mean."""

    fold: int
    spec: FuseSpec
    train: float
    test: float
    n_test: int


@dataclass(frozen=True, slots=True)
class TuningReport:
    """What tuning chose and how well it does out of sample.

    Attributes:
        spec: The spec tuned on every labeled query: the one to use from now on.
        metric: The metric tuned and reported (``ndcg@10``).
        cv: Mean over queries of the metric, each query ranked by the spec tuned on
            the folds it is not in (out-of-sample).
        cv_fold_mean: Mean over folds of each fold's test mean.
        in_sample: ``spec``'s mean on every labeled query (optimistic: tuned on them).
        baselines: Untuned means on every labeled query: ``keyword``, ``dense`` and
            ``rrf`` (k = 60, equal weights).
        folds: One entry per fold.
        n_queries: Labeled queries used (with a relevant document and a query text).
        grid_size: Specs tried.
        seed: Seed of the fold assignment.
        index: The index tuned ("" when tuned in memory).
        default_mode: The index's default mode after tuning ("" in memory): ``hybrid``
            when the out-of-sample figure beats the keyword side alone, else unchanged.
    """

    spec: FuseSpec
    metric: str
    cv: float
    cv_fold_mean: float
    in_sample: float
    baselines: dict[str, float]
    folds: tuple[FoldResult, ...]
    n_queries: int
    grid_size: int
    seed: int
    index: str = ""
    default_mode: str = ""


def _doc_of(table: Rows) -> Callable[[int], str]:
    """row -> doc_id; a lazily read table is asked per row (pools are small)."""
    doc_ids = getattr(table, "doc_ids", None)
    if doc_ids is not None:
        return doc_ids.__getitem__
    return lambda row: table.hit(row, 0, 0.0).doc_id


def default_grid(depth: int = DEFAULT_FUSE_DEPTH) -> list[FuseSpec]:
    """Return the specs tuning tries; plain RRF (k = 60, equal weights) comes first.

    Ties between specs go to the earlier one, so with nothing to gain tuning keeps RRF.
    """
    grid = [FuseSpec(depth=depth)]
    grid += [
        FuseSpec("rrf", k, weight=w, depth=depth)
        for k in RRF_KS
        for w in RRF_WEIGHTS
        if (k, w) != (60.0, 0.5)
    ]
    grid += [
        FuseSpec("convex", norm=norm, weight=w, depth=depth)
        for norm in ("minmax", "zscore")
        for w in CONVEX_WEIGHTS
    ]
    return grid


def fold_of(qids: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Assign each query to one of ``folds`` folds, sizes differing by at most one."""
    order = sorted(qids)
    random.Random(seed).shuffle(order)
    return {qid: i % folds for i, qid in enumerate(order)}


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


def tune_fusion(
    hybrid: HybridRetriever,
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    grid: Sequence[FuseSpec] | None = None,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    metric: str = DEFAULT_METRIC,
) -> TuningReport:
    """Pick the fusion spec that maximises ``metric``, with k-fold cross-validation.

    Args:
        hybrid: The keyword and dense retrievers to fuse (its own spec is ignored).
        queries: qid -> query text; only queries with a relevant document count.
        qrels: qid -> {doc_id: grade}, document-level.
        grid: Specs to try (default :func:`default_grid`); the first wins ties.
        folds: Number of folds, at least 2 and at most the number of queries.
        seed: Seed of the fold assignment.
        metric: A metric name such as ``ndcg@10`` or ``recall@100``.

    Raises:
        ConfigError: ``folds`` is out of range, the grid is empty, or the metric is bad.
        InputError: No query has both a text and a relevant document.
    """
    grid = list(grid) if grid is not None else default_grid()
    if not grid:
        raise ConfigError("the tuning grid is empty: give at least one FuseSpec")
    _eval.parse_metrics([metric])
    labeled = {q: qrels[q] for q in queries if any(g >= 1 for g in qrels.get(q, {}).values())}
    if not labeled:
        raise InputError(
            "no query has both a text and a relevant document in the qrels: check that "
            "the queries and qrels files use the same query ids"
        )
    if isinstance(folds, bool) or not isinstance(folds, int) or not 2 <= folds <= len(labeled):
        raise ConfigError(
            f"folds must be a whole number from 2 to the {len(labeled)} labeled queries, "
            f"got {folds!r}"
        )
    depth = max(spec.depth for spec in grid)
    found = hybrid.pools({q: queries[q] for q in labeled}, depth)
    table = np.array(
        [
            [scores[q] for q in labeled]
            for scores in _grid_scores(hybrid, found, labeled, grid, metric)
        ]
    )  # (specs, queries)
    qids = list(labeled)
    fold = fold_of(qids, folds, seed)
    fold_ids = np.array([fold[q] for q in qids])
    out_of_sample = np.zeros(len(qids))
    results = []
    for f in range(folds):
        test = fold_ids == f
        best = int(np.argmax(table[:, ~test].mean(axis=1)))
        out_of_sample[test] = table[best, test]
        results.append(
            FoldResult(
                f,
                grid[best],
                float(table[best, ~test].mean()),
                float(table[best, test].mean()),
                int(test.sum()),
            )
        )
    chosen = int(np.argmax(table.mean(axis=1)))
    return TuningReport(
        spec=grid[chosen],
        metric=metric,
        cv=float(out_of_sample.mean()),
        cv_fold_mean=float(np.mean([r.test for r in results])),
        in_sample=float(table[chosen].mean()),
        baselines=_baselines(hybrid, found, labeled, metric),
        folds=tuple(results),
        n_queries=len(qids),
        grid_size=len(grid),
        seed=seed,
    )


def _grid_scores(
    hybrid: HybridRetriever,
    found: Mapping[str, Pool],
    qrels: Qrels,
    grid: Sequence[FuseSpec],
    metric: str,
) -> list[dict[str, float]]:
    return [per_query_scores(hybrid, found, qrels, spec, metric) for spec in grid]


def _baselines(
    hybrid: HybridRetriever, found: Mapping[str, Pool], qrels: Qrels, metric: str
) -> dict[str, float]:
    """Untuned means: each side's own ranking alone, and plain RRF."""
    doc_of = _doc_of(hybrid.table)
    out = {}
    for side in ("keyword", "dense"):
        run: dict[str, dict[str, float]] = {}
        for qid, items in found.items():
            ranks = items.keyword_rank if side == "keyword" else items.dense_rank
            listed = np.flatnonzero(ranks > 0)
            order = listed[np.argsort(ranks[listed])]
            run[qid] = {}
            for i, row in enumerate(items.keys[order].tolist()):
                run[qid].setdefault(doc_of(row), float(len(order) - i))
        out[side] = _eval.evaluate(run, qrels, [metric]).mean[metric]
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


def tune(
    table: ChunkTable,
    embedder: Encoder,
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    keyword: str = "bm25",
    vectors: np.ndarray | None = None,
    grid: Sequence[FuseSpec] | None = None,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    metric: str = DEFAULT_METRIC,
) -> tuple[HybridRetriever, TuningReport]:
    """Build keyword and dense retrieval over ``table`` in memory and tune their fusion.

    Args:
        table: The chunks.
        embedder: The dense model (wrap it in ``ctxselect.embed.CachedEmbedder`` to
            reuse vectors).
        queries: qid -> query text.
        qrels: qid -> {doc_id: grade}.
        keyword: The keyword mode to fuse (``bm25`` by default).
        vectors: Precomputed chunk vectors, one row per table row.
        grid: Specs to try (default :func:`default_grid`).
        folds: Cross-validation folds.
        seed: Seed of the fold assignment.
        metric: The metric to maximise.

    Returns:
        The hybrid retriever fused with the chosen spec, and the tuning report.
    """
    sparse = RETRIEVERS.get(keyword).build(table)
    dense = DenseRetriever.build(table, embedder, vectors)
    hybrid = HybridRetriever(sparse, dense)
    report = tune_fusion(hybrid, queries, qrels, grid=grid, folds=folds, seed=seed, metric=metric)
    return hybrid.with_spec(report.spec), report


def tune_index(
    index: str | os.PathLike[str] | None,
    queries: str | os.PathLike[str],
    qrels: str | os.PathLike[str] | None = None,
    *,
    grid: Sequence[FuseSpec] | None = None,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    metric: str = DEFAULT_METRIC,
    embedder: Embedder | str | None = None,
    write: bool = True,
    wait: float = 0.0,
) -> TuningReport:
    """Tune the hybrid fusion of a stored index on labeled queries and remember it.

    The index's own bm25 and dense retrieval are searched (nothing is rebuilt). The
    chosen spec, with the cross-validated figures, goes into the index manifest, and
    ``search``, ``select`` and the MCP server use it for ``hybrid`` from then on. The
    default mode becomes ``hybrid`` when its out-of-sample figure beats bm25 alone, and
    goes back to bm25 when a later run finds it no longer does.

    Args:
        index: The index folder (default: ``$CTXSELECT_INDEX`` or ``./.ctxselect``).
        queries: BEIR ``queries.jsonl`` with ``qrels``, or lab JSONL with labels.
        qrels: BEIR or TREC qrels (document ids of the index).
        grid: Specs to try (default :func:`default_grid`).
        folds: Cross-validation folds.
        seed: Seed of the fold assignment.
        metric: The metric to maximise.
        embedder: Query embedder (default: the index's own).
        write: Record the result in the index (False: only report it).
        wait: Seconds to wait for another writer.

    Raises:
        IndexMismatchError: The index has no dense vectors (build it with an embedder).
        InputError: No labeled query fits the index.
    """
    with open_index(index, embedder=embedder) as idx:
        doc_ids = set(idx.store.doc_hashes())
        labeled = _eval.load_labeled_set(queries, qrels, None, doc_ids, lambda _d: 0)
        hybrid = idx.retriever("hybrid")
        if not isinstance(hybrid, HybridRetriever):
            raise ConfigError(f"mode hybrid of index {idx.path} is not a hybrid retriever")
        report = tune_fusion(
            hybrid,
            labeled.queries,
            labeled.labels.qrels,
            grid=grid,
            folds=folds,
            seed=seed,
            metric=metric,
        )
        before = str(idx.manifest.get("default_mode", DEFAULT_MODE))
        if report.cv > report.baselines["keyword"]:
            mode = "hybrid"
        elif before == "hybrid":
            mode = DEFAULT_MODE  # this run finds hybrid no longer beats bm25 alone
        else:
            mode = before
        report = dataclasses.replace(report, index=idx.path, default_mode=mode)
        if write:
            with idx.store.lock(wait):
                idx.store.commit_settings(
                    {
                        "fusion": dataclasses.asdict(report.spec),
                        "tuning": _summary(report, queries, qrels),
                        "default_mode": mode,
                    }
                )
        return report


def _summary(
    report: TuningReport,
    queries: str | os.PathLike[str],
    qrels: str | os.PathLike[str] | None,
) -> dict[str, Any]:
    """What the manifest keeps of a tuning run (``ctxselect info`` shows it)."""
    return {
        "tuned": datetime.now(UTC).isoformat(timespec="seconds"),
        "metric": report.metric,
        "cv": round(report.cv, 6),
        "in_sample": round(report.in_sample, 6),
        "baselines": {k: round(v, 6) for k, v in report.baselines.items()},
        "n_queries": report.n_queries,
        "folds": len(report.folds),
        "seed": report.seed,
        "grid_size": report.grid_size,
        "queries": os.fspath(queries),
        "qrels": os.fspath(qrels) if qrels is not None else "",
    }


__all__ = [
    "FoldResult",
    "TuningReport",
    "default_grid",
    "fold_of",
    "per_query_scores",
    "tune",
    "tune_fusion",
    "tune_index",
]

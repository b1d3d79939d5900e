"""Tune hybrid fusion on labeled queries, with k-fold cross-validation.

The candidates are the grid (RRF k and weight, convex normalisation and weight) and each
single retriever alone (keyword, dense). A few dozen labeled queries cannot tell most
settings apart, so the choice follows the one-standard-error rule
(:mod:`ctxselect.eval.one_se`): the simplest candidate whose lag behind the best is within
one SE of noise (paired per query, for the best of many). Simplest means: plain RRF, then
each side alone (the better first), then the rest of the grid in :func:`complexity` order.
Every query is scored by the candidate the rule picks on the *other* folds, so the
reported figure is out of sample, rule included (nested). The choice returned for use is
then made on all the queries.

Each side is searched once per query, ``spec.depth`` deep, and every spec fuses those
candidates. :func:`tune_index` records the chosen spec in a stored index's manifest (read
by ``search``, ``select`` and MCP); :func:`tune` works in memory over a ChunkTable.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ctxselect import eval as _eval
from ctxselect.api.calibrate import indexed_labels, indexed_queries, label_mismatches, too_few_error
from ctxselect.api.fusion_candidates import (
    CONVEX_WEIGHTS,
    DEFAULT_METRIC,
    RRF_KS,
    RRF_WEIGHTS,
    SINGLES,
    complexity,
    default_grid,
    per_query_scores,
)

# called by these names: tests and bench/tuning_noise.py patch them here, as _choose
from ctxselect.api.fusion_candidates import baselines as _baselines
from ctxselect.api.fusion_candidates import grid_scores as _grid_scores
from ctxselect.api.fusion_candidates import single_scores as _single_scores
from ctxselect.api.read import open_index
from ctxselect.config import DEFAULT_MODE, FuseSpec
from ctxselect.embed import Embedder
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.folds import DEFAULT_FOLDS, fold_of
from ctxselect.eval.one_se import one_se_choice
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.dense import DenseRetriever, Encoder
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.retrieve.modes import build_mode
from ctxselect.types import ChunkTable, Qrels


@dataclass(frozen=True, slots=True)
class FoldResult:
    """One fold: what the rule chose on the other folds, its train mean and its test mean.

    Attributes:
        fold: Fold number, from 0.
        spec: The fusion spec the rule chose among the grid on the other folds.
        train: Mean of the candidate chosen (``mode``) on the other folds.
        test: Its mean on this fold's queries (out of sample).
        n_test: Queries in this fold.
        mode: The candidate chosen on the other folds: ``hybrid`` (fused with ``spec``),
            ``keyword`` or ``dense`` (that side alone).
    """

    fold: int
    spec: FuseSpec
    train: float
    test: float
    n_test: int
    mode: str = HybridRetriever.mode


@dataclass(frozen=True, slots=True)
class TuningReport:
    """What tuning chose and how well it does out of sample.

    Attributes:
        spec: The fusion spec the rule picks among the grid on every labeled query: what
            ``hybrid`` uses from now on.
        metric: The metric tuned and reported (``ndcg@10``).
        cv: Mean over queries of the metric, each query ranked by the candidate the rule
            picks on the folds it is not in (out of sample, the rule nested).
        cv_fold_mean: Mean over folds of each fold's test mean.
        in_sample: The chosen candidate's (``mode``) mean on every labeled query.
        baselines: Untuned means on every labeled query: ``keyword``, ``dense`` and
            ``rrf`` (k = 60, equal weights).
        folds: One entry per fold.
        n_queries: Labeled queries used (with a relevant document and a query text).
        grid_size: Specs tried.
        seed: Seed of the fold assignment.
        index: The index tuned ("" when tuned in memory).
        default_mode: The index's default mode after tuning ("" in memory): ``mode``,
            with ``keyword`` named by its mode (``bm25``).
        mode: The candidate the rule picks on every labeled query: ``hybrid`` (fused with
            ``spec``), or ``keyword`` or ``dense`` alone when fusion does not beat the
            better of them by more than one SE.
        fold_std: Fold-to-fold spread of ``cv``: standard deviation (n - 1) of the folds'
            test means.
        unknown_queries_in_qrels ... empty_doc_ids: What of the labels the queries file
            or the index lacks (``api.calibrate.LabelMismatches``; :func:`tune_index` only).
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
    mode: str = HybridRetriever.mode
    fold_std: float = 0.0
    unknown_queries_in_qrels: int = 0
    unknown_query_ids: tuple[str, ...] = ()
    unknown_docs_in_qrels: int = 0
    unknown_doc_ids: tuple[str, ...] = ()
    unmatched_labels: tuple[str, ...] = ()
    empty_docs_in_qrels: int = 0
    empty_doc_ids: tuple[str, ...] = ()


def tune_fusion(
    hybrid: HybridRetriever,
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    grid: Sequence[FuseSpec] | None = None,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    metric: str = DEFAULT_METRIC,
    progress: bool = False,
) -> TuningReport:
    """Choose fusion by the one-SE rule, with its out-of-sample figure by k-fold CV. The
    candidates are the grid and each side alone (:data:`SINGLES`); the rule picks the
    simplest within one paired SE of the best (see the module docstring), inside each fold
    for ``cv`` and on every query for ``spec`` and ``mode``.

    Args:
        hybrid: The keyword and dense retrievers to fuse (its own spec is ignored).
        queries: qid -> query text; only queries with a relevant document count.
        qrels: qid -> {doc_id: grade}, document-level.
        grid: Specs to try, simplest first (default :func:`default_grid`).
        folds: Number of folds, at least 2 and at most the number of queries.
        seed: Seed of the fold assignment.
        metric: A metric name such as ``ndcg@10`` or ``recall@100``.
        progress: Show a progress bar on stderr while the specs are scored.

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
    qids = list(labeled)
    found = hybrid.pools({q: queries[q] for q in qids}, max(spec.depth for spec in grid))
    rows = [*_grid_scores(hybrid, found, labeled, grid, metric, progress)]  # patched: positional
    rows += _single_scores(hybrid, found, labeled, metric).values()
    table = np.array([[scores.get(q, 0.0) for q in qids] for scores in rows])  # (rows, qids)
    fold = fold_of(qids, folds, seed)
    out_of_sample, results = _nested(table, grid, np.array([fold[q] for q in qids]))
    spec_row, row = _choose(table, len(grid))
    tests = [r.test for r in results]
    return TuningReport(
        spec=grid[spec_row],
        metric=metric,
        cv=float(out_of_sample.mean()),
        cv_fold_mean=float(np.mean(tests)),
        in_sample=float(table[row].mean()),
        baselines=_baselines(hybrid, found, labeled, metric, table[len(grid) :]),
        folds=tuple(results),
        n_queries=len(qids),
        grid_size=len(grid),
        seed=seed,
        mode=_mode_of(row, len(grid)),
        fold_std=float(np.std(tests, ddof=1)),
    )


def _nested(
    table: np.ndarray, grid: Sequence[FuseSpec], fold_ids: np.ndarray
) -> tuple[np.ndarray, list[FoldResult]]:
    """Score each fold's queries by the rule's choice on the other folds' queries."""
    out_of_sample = np.zeros(table.shape[1])
    results = []
    for f in range(int(fold_ids.max()) + 1):
        test = fold_ids == f
        spec_row, row = _choose(table[:, ~test], len(grid))
        out_of_sample[test] = table[row, test]
        results.append(
            FoldResult(
                f,
                grid[spec_row],
                float(table[row, ~test].mean()),
                float(table[row, test].mean()),
                int(test.sum()),
                _mode_of(row, len(grid)),
            )
        )
    return out_of_sample, results


def _choose(table: np.ndarray, n_grid: int) -> tuple[int, int]:
    """(grid row, row) the one-SE rule picks; the last rows of ``table`` are :data:`SINGLES`.

    The grid row is what ``hybrid`` fuses with (the rule over the grid alone, in grid
    order). The row is the candidate to use, by the rule over every row in this order:
    the grid's first (plain RRF), each side alone (the better one first), the rest of the
    grid. Plain RRF comes first because it needs no choice at all; a side alone must then
    beat it by more than the noise (docs/13-dense-hybrid.md has the measurements).
    """
    singles = sorted(range(n_grid, len(table)), key=lambda r: -table[r].mean())
    order = [0, *singles, *range(1, n_grid)]
    return one_se_choice(table[:n_grid]), one_se_choice(table, order)


def _mode_of(row: int, n_grid: int) -> str:
    return HybridRetriever.mode if row < n_grid else SINGLES[row - n_grid]


def tune(
    table: ChunkTable,
    embedder: Encoder,
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    keyword: str = BM25Retriever.mode,
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
    sparse = build_mode(table, keyword)
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
    calibrate: bool = True,
    progress: bool = False,
) -> TuningReport:
    """Tune the hybrid fusion of a stored index on labeled queries and remember it.

    The index's own bm25 and dense retrieval are searched (nothing is rebuilt). The
    chosen spec, with the cross-validated figures, goes into the index manifest, and
    ``search``, ``select`` and the MCP server use it for ``hybrid`` from then on. The
    default mode becomes the candidate the one-SE rule picks: ``hybrid``, or ``bm25`` or
    ``dense`` alone when fusion does not beat the better of them by more than one SE.

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
        calibrate: Then fit P(relevant) per mode (``api.calibrate.calibrate_index``) when writing
            and at least 10 queries are labeled.
        progress: Show a progress bar on stderr while the fusion specs are scored.

    Raises:
        IndexMismatchError: The index has no dense vectors (build it with an embedder).
        InputError: No labeled query fits the index.
    """
    with open_index(index, embedder=embedder) as idx:
        labeled, doc_ids = indexed_labels(idx, queries, qrels)
        if not indexed_queries(labeled, doc_ids):  # tuning on them would store noise
            raise too_few_error(idx.path, labeled, doc_ids, 0, what="fusion tuning", need=2)
        hybrid = idx.local_retriever(HybridRetriever.mode)  # a served one has no pools
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
            progress=progress,
        )
        mode = DEFAULT_MODE if report.mode == "keyword" else report.mode  # hybrid fuses bm25
        unknown = dataclasses.asdict(label_mismatches(labeled))
        report = dataclasses.replace(report, index=idx.path, default_mode=mode, **unknown)
        if write:
            with idx.store.lock(wait):
                idx.store.commit_settings(
                    {
                        "fusion": dataclasses.asdict(report.spec),
                        "tuning": _summary(report, queries, qrels),
                        "default_mode": mode,
                    }
                )
    from ctxselect.api.calibrate import MIN_CALIBRATION_QUERIES, calibrate_index  # it uses us

    if write and calibrate and report.n_queries >= MIN_CALIBRATION_QUERIES:
        # after the commit: P(relevant) of hybrid reads the fused scores just stored
        calibrate_index(index, queries, qrels, folds=folds, seed=seed, embedder=embedder, wait=wait)
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
        "mode": report.mode,
        "fold_std": round(report.fold_std, 6),
        "baselines": {k: round(v, 6) for k, v in report.baselines.items()},
        "n_queries": report.n_queries,
        "folds": len(report.folds),
        "seed": report.seed,
        "grid_size": report.grid_size,
        "queries": os.fspath(queries),
        "qrels": os.fspath(qrels) if qrels is not None else "",
    }


__all__ = [
    "CONVEX_WEIGHTS",
    "DEFAULT_METRIC",
    "RRF_KS",
    "RRF_WEIGHTS",
    "SINGLES",
    "FoldResult",
    "TuningReport",
    "complexity",
    "default_grid",
    "fold_of",
    "per_query_scores",
    "tune",
    "tune_fusion",
    "tune_index",
]

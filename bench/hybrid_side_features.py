"""Hybrid P(relevant): the fused ranking's features alone, or with each side's evidence too.

``tune`` calibrates hybrid on features of the *fused* ranking (score relative to the top,
rank, gap, z-score ...: :mod:`ctxselect.budget.calibration_model`). RRF's fused score is a
function of ranks alone, so a question this benchmark asks is whether P gets better when
the model also reads each side's own evidence: for the keyword side and the dense side,
the chunk's raw score, its z-score against that side's top 100 scores in the pool, and
ln(its rank on that side) (rank 1001 when outside the side's top 1,000).

For each collection and fusion setting (plain RRF k = 60, RRF k = 20, convex minmax and
convex zscore, equal weights), on an index DIR/<name> made with ``ctxselect index
D/corpus.jsonl --embedder minilm`` (default chunking):

- P is fitted out of sample (5 folds by query, seed 0), with and without the side
  features, and its ECE and log loss are measured on the held-out chunks;
- the stopping curve is measured exactly as ``bench/stopping.py`` measures it
  (``--stop auto`` at the caps 1000-8000 against the fill curve), and its gain at matched
  mean tokens is reported;
- the cost model's net value per query (V = 2000, T = 10, c = 0.1, P out of sample) is
  compared query by query: mean difference (sides - fused only) and its paired SE.

The side features are not in the product; this script adds them by patching the feature
function (each hit's score carries its side features), so the rest of the measurement is
the product's code. Prints one JSON line per (collection, fusion, feature set). Never
asserts.

    .venv/bin/python bench/hybrid_side_features.py --indexes DIR [--datasets cranfield ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stopping as _stopping  # the same curves and gains as the stopping benchmark
from _common import datasets_root
from ctxselect import eval as _eval
from ctxselect.api import open_index
from ctxselect.api.calibrate import net_value
from ctxselect.api.selections import (
    CALIBRATION_DEPTH,
    MemoCounter,
    measure_budgets,
    plan_stop,
    selection_depth,
)
from ctxselect.budget import calibration as _calibration
from ctxselect.budget import calibration_model as _model
from ctxselect.budget.stop import auto_kept
from ctxselect.config import FuseSpec
from ctxselect.eval.folds import fold_of

DATASETS = _stopping.DATASETS
SPECS = (
    FuseSpec(method="rrf", k=60),
    FuseSpec(method="rrf", k=20),
    FuseSpec(method="convex", norm="minmax"),
    FuseSpec(method="convex", norm="zscore"),
)
SIDE_FEATURES = ("kw_score", "kw_z", "kw_log_rank", "dense_score", "dense_z", "dense_log_rank")
OUTSIDE_RANK = 1001  # a side's rank for a chunk outside its top 1,000 (the pool depth)
TURNS, CACHE, VALUE = 10, 0.1, 2000.0


class Scored(float):
    """A fused score that carries the chunk's side features through the product's code."""

    sides: tuple[float, ...]

    def __new__(cls, value: float, sides: Sequence[float]) -> Scored:
        made = float.__new__(cls, value)
        made.sides = tuple(sides)
        return made


_BASE = _model.rank_features


def _with_sides(scores: Sequence[float]) -> np.ndarray:
    """The product's features, plus :data:`SIDE_FEATURES` when the scores carry them."""
    x = _BASE([float(s) for s in scores])
    if len(scores) and isinstance(scores[0], Scored):
        x = np.column_stack([x, np.array([s.sides for s in scores])])  # type: ignore[attr-defined]
    return x


def side_features(items: Any, rows: Sequence[int]) -> list[list[float]]:
    """Each row's :data:`SIDE_FEATURES`, from its query's pool (both sides scored)."""
    at = {int(k): i for i, k in enumerate(items.keys.tolist())}
    sides = []
    for scores, ranks in ((items.keyword, items.keyword_rank), (items.dense, items.dense_rank)):
        head = np.sort(scores)[::-1][: _model.STATS_DEPTH]
        sides.append((scores, ranks, float(head.mean()), float(head.std()) or 1.0))
    out = []
    for row in rows:
        i = at[row]
        values: list[float] = []
        for scores, ranks, mean, sd in sides:
            s = float(scores[i])
            values += [s, (s - mean) / sd, math.log(int(ranks[i]) or OUTSIDE_RANK)]
        out.append(values)
    return out


def measure(name: str, index: str, spec: FuseSpec) -> list[dict[str, Any]]:
    """Both feature sets on one collection and fusion setting: one row each."""
    folder = datasets_root() / name
    with open_index(index) as idx:
        labeled = _eval.load_labeled_set(
            folder / "queries.jsonl",
            folder / "qrels" / "test.tsv",
            None,
            set(idx.table.doc_ids),
            lambda d: len(idx.get_document(d).text),
        )
        n_tokens = idx.table.n_tokens
        hybrid = idx.retriever("hybrid").with_spec(spec)
        depth = max(selection_depth(max(_stopping.CAPS), n_tokens), CALIBRATION_DEPTH)
        hits = {}
        for qid, items in hybrid.pools(labeled.queries, spec.depth).items():
            ranked = hybrid.fuse_pool(items, depth)
            extra = side_features(items, [hybrid.table.row_of[h.chunk_id] for h in ranked])
            hits[qid] = [
                dataclasses.replace(h, score=Scored(h.score, s))
                for h, s in zip(ranked, extra, strict=True)
            ]
        mean_chunk = sum(n_tokens) / len(n_tokens)
        counter = MemoCounter(idx.chunk_spec.tokenizer)

        def curve(stop: str, budgets: Sequence[int]) -> list[tuple[int, float, float]]:
            plan = plan_stop(stop, hits, labeled.labels, mean_chunk)
            measured = measure_budgets(
                hits,
                labeled.labels,
                [("skip", b) for b in budgets],
                counter=counter,
                n_tokens=n_tokens,
                span_text=idx.store.span_text,
                format="markdown",
                stop=plan,
            )
            return [
                (
                    b,
                    _stopping._mean(measured[("skip", b)], f"tokens_used@{b}t"),
                    _stopping._mean(measured[("skip", b)], f"recall@{b}t"),
                )
                for b in budgets
            ]

        with mock.patch.object(_model, "rank_features", _BASE):
            fill = curve("none", sorted({*_stopping.CAPS, *_stopping.EXTRA}))
        rows, values = [], {}
        for sides in (False, True):
            features = _with_sides if sides else _BASE
            with (
                mock.patch.object(_model, "rank_features", features),
                mock.patch.object(_calibration, "rank_features", features),
            ):
                stopped = curve("auto", _stopping.CAPS)
                reliability, values[sides] = _held_out(hits, labeled.labels, mean_chunk)
            gains = _stopping.rows_of(name, "hybrid", {"curves": {"none": fill, "auto": stopped}})
            rows.append(
                {
                    "dataset": name,
                    "fusion": spec.label(),
                    "side_features": sides,
                    "ece": round(reliability.ece, 4),
                    "log_loss": round(reliability.log_loss, 4),
                    "gain_at_caps": [r["gain"] for r in gains],
                    "stop_share_at_caps": [r["ratio"] for r in gains],
                    "net_value": round(float(values[sides].mean()), 1),
                }
            )
        diff = values[True] - values[False]
        rows[1]["net_value_diff"] = round(float(diff.mean()), 1)
        rows[1]["net_value_diff_se"] = round(float(diff.std(ddof=1) / math.sqrt(len(diff))), 1)
        return rows


def _held_out(
    hits: dict[str, list[Any]], labels: Any, mean_chunk: float
) -> tuple[_calibration.Reliability, np.ndarray]:
    """Out-of-sample reliability of P and each query's net value at the cost model's t."""
    rankings = {
        q: (
            [h.score for h in top],
            [int(labels.grade(q, h.doc_id, h.start, h.end) >= 1) for h in top],
        )
        for q, top in ((q, ranked[:CALIBRATION_DEPTH]) for q, ranked in hits.items())
    }
    fold = fold_of(sorted(rankings), 5, 0)
    models = _calibration.out_of_sample_models(rankings, fold)
    t = _calibration.cost_threshold(mean_chunk, TURNS, CACHE)
    bill = 1 + (TURNS - 1) * CACHE
    values = []
    for q, (scores, relevant) in sorted(rankings.items()):
        if q in models and scores:
            ps = models[q].predict(scores)
            tokens = [h.n_tokens for h in hits[q][:CALIBRATION_DEPTH]]
            kept = auto_kept(ps, tokens, t, mean_chunk)
            values.append(net_value(relevant, tokens, kept, VALUE, bill))
    return _calibration.cross_validate(rankings, fold), np.array(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--indexes", required=True, help="folder of <dataset> minilm indexes")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    args = parser.parse_args()
    for name in args.datasets:
        index = Path(args.indexes) / name
        if not index.exists():
            sys.exit(
                f"no index at {index}: make it with `ctxselect index "
                f"{datasets_root() / name / 'corpus.jsonl'} --index {index} --embedder minilm`"
            )
        for spec in SPECS:
            for row in measure(name, str(index), spec):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

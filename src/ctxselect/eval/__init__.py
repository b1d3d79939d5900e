"""Run + Qrels -> Report: file formats, trec_eval-exact metrics, lab tables."""

from __future__ import annotations

from ctxselect.eval.budget_metrics import (
    answered_queries,
    recall_at_budget,
    relevant_tokens_share,
)
from ctxselect.eval.evaluate import DEFAULT_METRICS, EvalReport, count_unknown_docs, evaluate
from ctxselect.eval.lab import (
    BudgetRow,
    SizeSweepRow,
    estimate_tokens,
    label_matches,
    labels_to_qrels,
    size_sweep_row,
    unmatched_labels,
)
from ctxselect.eval.metrics import METRICS, MetricSpec, parse_metric, parse_metrics
from ctxselect.eval.qrels_io import (
    detect_qrels_format,
    load_qrels,
    read_beir_qrels,
    read_trec_qrels,
    write_trec_qrels,
)
from ctxselect.eval.queries_io import LabeledQuery, load_beir_split, read_labeled, read_queries
from ctxselect.eval.ranking import collapse_to_docs, rank, ranked_ids, strictly_decreasing
from ctxselect.eval.run_io import read_trec_run, write_trec_run
from ctxselect.eval.tables import render_table, to_markdown

__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "BudgetRow",
    "EvalReport",
    "LabeledQuery",
    "MetricSpec",
    "SizeSweepRow",
    "answered_queries",
    "collapse_to_docs",
    "count_unknown_docs",
    "detect_qrels_format",
    "estimate_tokens",
    "evaluate",
    "label_matches",
    "labels_to_qrels",
    "load_beir_split",
    "load_qrels",
    "parse_metric",
    "parse_metrics",
    "rank",
    "ranked_ids",
    "read_beir_qrels",
    "read_labeled",
    "read_queries",
    "read_trec_qrels",
    "read_trec_run",
    "recall_at_budget",
    "relevant_tokens_share",
    "render_table",
    "size_sweep_row",
    "strictly_decreasing",
    "to_markdown",
    "unmatched_labels",
    "write_trec_qrels",
    "write_trec_run",
]

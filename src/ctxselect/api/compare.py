"""``compare_run_files`` (``ctxselect compare``): two TREC runs, paired differences and a
randomization test per metric, read as trec_eval reads them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from ctxselect import eval as _eval
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import Comparison
from ctxselect.types import Qrels, Run

__all__ = ["compare_run_files"]

_Path = str | os.PathLike[str]


def compare_run_files(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    qrels: str | os.PathLike[str],
    *,
    metrics: Sequence[str] | str = _eval.DEFAULT_METRICS,
    permutations: int = _eval.DEFAULT_PERMUTATIONS,
    seed: int = _eval.DEFAULT_SEED,
) -> Comparison:
    """Compare two TREC runs per metric: paired differences and a randomization test.

    A run of chunks (``DOC#N`` ids, as ``eval --level chunk --run-out`` writes) matches no
    document judgment; it is scored by document instead, each document ranked by its best
    chunk as ``eval`` ranks them at ``level="doc"``, and ``by_document`` names it.

    Raises:
        ConfigError: A metric is invalid or is a budget metric (runs hold rankings, not
            selections), or ``permutations`` < 1.
        InputError: A file is malformed, or the runs share no query with the qrels.
    """
    ranking, budget_specs = _eval.split_metrics(metrics)
    if budget_specs:
        raise ConfigError(
            f"{budget_specs[0]} is a budget metric, and TREC runs hold rankings, not "
            "selections: compare ranking metrics (ndcg@10, recall@100, ...), or measure "
            "budgets with `ctxselect eval --budgets` or `ctxselect sweep`"
        )
    judged = _eval.load_qrels(qrels)
    runs, by_document = [], []
    for path in (run_a, run_b):
        run = _eval.in_trec_eval_order(_eval.read_trec_run(path))  # ties as trec_eval
        _check_run_queries(run, judged, path, qrels)
        documents = _eval.chunk_run_by_document(run, judged)
        if documents is not None:  # eval --level chunk's ids: score its documents
            run = documents
            by_document.append(os.fspath(path))
        runs.append(run)
    result = _eval.compare_runs(
        runs[0],
        runs[1],
        judged,
        [str(spec) for spec in ranking],
        permutations=permutations,
        seed=seed,
    )
    return dataclasses.replace(
        result, run_a=os.fspath(run_a), run_b=os.fspath(run_b), by_document=tuple(by_document)
    )


def _check_run_queries(run: Run, judged: Qrels, path: _Path, qrels: _Path) -> None:
    """Refuse a run with no line, or none of whose queries the qrels judge, naming it.

    Raises:
        InputError: Naming the run file, what it holds and the fix.
    """
    if not run:
        raise InputError(
            f"run {os.fspath(path)} holds no ranking: it is empty; write one line per "
            f"ranked document, 'qid Q0 docid rank score tag' (`ctxselect eval --run-out`)"
        )
    if not any(qid in judged for qid in run):
        shown = ", ".join(sorted(run)[:3])
        raise InputError(
            f"run {os.fspath(path)} shares no query id with the qrels {os.fspath(qrels)} "
            f"(run: {shown}...; qrels: {', '.join(sorted(judged)[:3])}...): use the same "
            f"query ids in both, e.g. the queries file's ids"
        )

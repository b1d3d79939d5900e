"""The ``tune`` command: fit the hybrid fusion and P(relevant) of an index on labeled queries."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import click

from ctxselect import api, config
from ctxselect.api import modes
from ctxselect.api.calibrate import (
    DEFAULT_CACHE_FACTOR,
    DEFAULT_TURNS,
    CalibrationReport,
    LabelMismatches,
    calibrate_index,
    index_label_mismatches,
)
from ctxselect.api.tune import DEFAULT_FOLDS, DEFAULT_METRIC, TuningReport, tune_index
from ctxselect.errors import InputError
from ctxselect.interfaces.cli import render_measure
from ctxselect.interfaces.cli.group import (
    cli,
    emit_json,
    index_option,
    json_option,
    progress_enabled,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.store import wait_option


@cli.command()
@click.option(
    "--queries",
    required=True,
    type=click.Path(),
    help="BEIR queries.jsonl (with --qrels), or lab JSONL with labels.",
)
@click.option(
    "--qrels",
    type=click.Path(),
    default=None,
    help="BEIR qrels TSV or TREC qrels, judging the index's document ids.",
)
@click.option(
    "--folds",
    type=int,
    default=DEFAULT_FOLDS,
    show_default=True,
    help="Cross-validation folds (2 to the number of labeled queries).",
)
@click.option(
    "--seed",
    type=number(config.SEED),
    default=0,
    show_default=True,
    help="Seed of the fold assignment.",
)
@click.option(
    "--metric",
    default=DEFAULT_METRIC,
    show_default=True,
    help="Metric to maximise (name@k, e.g. ndcg@10, recall@100).",
)
@click.option(
    "--turns",
    type=click.IntRange(1, None),
    default=DEFAULT_TURNS,
    show_default=True,
    help="Turns a selection stays in the context (T of the stopping threshold).",
)
@click.option(
    "--cache-factor",
    type=click.FloatRange(0.0, 1.0),
    default=DEFAULT_CACHE_FACTOR,
    show_default=True,
    help="Price of a re-sent token relative to a fresh one (c; 1.0 without a prompt cache).",
)
@click.option("--dry-run", is_flag=True, help="Report what tuning would choose; write nothing.")
@index_option
@wait_option
@json_option
def tune(
    queries: str,
    qrels: str | None,
    folds: int,
    seed: int,
    metric: str,
    turns: int,
    cache_factor: float,
    dry_run: bool,
    index: str | None,
    wait: float,
    as_json: bool,
) -> None:
    """Tune hybrid fusion and calibrate P(relevant) per mode, on labeled queries.

    Fusion: weighs RRF and convex fusion settings and each side alone with k-fold
    cross-validation, taking the simplest within one standard error of the best (plain
    RRF first): the figure reported is out of sample (each query scored by the choice
    made on the other folds), with its fold-to-fold spread, next to keyword, dense and
    plain RRF on the same queries. The setting chosen on all queries is stored in the
    index (search, select and the MCP server use it for hybrid), and the default mode
    becomes the choice: hybrid, or bm25 or dense alone when fusion does not beat it.
    Fusion needs dense vectors (`ctxselect index --embedder NAME`); without them only
    the keyword modes are calibrated.

    Calibration: fits P(relevant) of a ranked chunk from its rank features per mode
    (needs at least 10 labeled queries), reports its out-of-sample expected calibration
    error, and stores it with the stopping threshold of `select --stop auto`:
    t = min(1, n x (1 + (T - 1) x c) / 2000), n the mean chunk size in tokens; a
    chunk of m tokens stays while P >= t x (m / n) x (1 + the relevant chunks
    expected above it).
    """
    write = not dry_run
    report = _tune_fusion(
        index, queries, qrels, folds=folds, seed=seed, metric=metric, write=write, wait=wait
    )
    calibrate = functools.partial(
        calibrate_index,
        index,
        queries,
        qrels,
        folds=folds,
        seed=seed,
        turns=turns,
        cache_factor=cache_factor,
        write=write,
        wait=wait,
    )
    calibration, skipped = _calibrated(calibrate, fusion_tuned=report is not None)
    unknown = _mismatches(report) if report else index_label_mismatches(index, queries, qrels)
    if as_json:
        emit_json({**_as_json(report, calibration, skipped), **dataclasses.asdict(unknown)})
        return
    text = _tune_text(report, calibration, skipped, index=index, written=write)
    click.echo("\n".join([text, *_mismatch_lines(unknown)]))


def _tune_fusion(
    index: str | None,
    queries: str,
    qrels: str | None,
    *,
    folds: int,
    seed: int,
    metric: str,
    write: bool,
    wait: float,
) -> TuningReport | None:
    """Tune the hybrid fusion of an index that has a fusion mode (None if it has none)."""
    with api.open_index(index) as idx:
        fusable = bool(set(idx.modes()) & set(modes.fusion_modes()))
    if not fusable:
        return None
    return tune_index(
        index,
        queries,
        qrels,
        folds=folds,
        seed=seed,
        metric=metric,
        write=write,
        wait=wait,
        calibrate=False,
        progress=progress_enabled(),
    )


def _mismatches(report: TuningReport) -> LabelMismatches:
    return LabelMismatches(
        report.unknown_queries_in_qrels,
        report.unknown_query_ids,
        report.unknown_docs_in_qrels,
        report.unknown_doc_ids,
        report.unmatched_labels,
        report.empty_docs_in_qrels,
        report.empty_doc_ids,
    )


def _mismatch_lines(unknown: LabelMismatches) -> list[str]:
    """What of the labels was not used, as ``eval`` says it (nothing when all fit)."""
    lines = render_measure.label_mismatches(
        unknown.unknown_queries_in_qrels,
        unknown.unknown_query_ids,
        unknown.unknown_docs_in_qrels,
        unknown.unknown_doc_ids,
        where="the index",
    )
    if unknown.empty_docs_in_qrels:
        lines.append(
            render_measure.empty_docs_line(unknown.empty_docs_in_qrels, unknown.empty_doc_ids)
        )
    if unknown.unmatched_labels:
        lines.append(render_measure.unmatched_labels_line(unknown.unmatched_labels))
    return lines


def _calibrated(
    calibrate: Callable[[], CalibrationReport], *, fusion_tuned: bool
) -> tuple[CalibrationReport | None, str]:
    """Run ``calibrate``; (None, why) if the labels do not allow it but the fusion was tuned.

    Raises:
        InputError: The labels do not allow calibrating and no fusion was tuned either.
    """
    try:
        return calibrate(), ""
    except InputError as exc:
        if not fusion_tuned:
            raise
        return None, str(exc)


def _tune_text(
    report: TuningReport | None,
    calibration: CalibrationReport | None,
    skipped: str,
    *,
    index: str | None,
    written: bool,
) -> str:
    """The fusion chosen (or why none was tuned), then the calibration (or why it was skipped)."""
    if report is not None:
        fusion = render_measure.tuning_report(report, written=written)
    else:
        fusion = (
            f"fusion not tuned: the index has no dense vectors (add them with `ctxselect index "
            f"--index {calibration.index if calibration else index} --embedder minilm`); "
            f"calibrating the keyword modes only"
        )
    calibrated = calibration_report(calibration, written=written) if calibration else skipped
    return f"{fusion}\n{calibrated}"


def _as_json(
    report: TuningReport | None, calibration: CalibrationReport | None, skipped: str
) -> dict[str, Any]:
    data: dict[str, Any] = dataclasses.asdict(report) if report else {"fusion": None}
    data["calibration"] = dataclasses.asdict(calibration) if calibration else {"skipped": skipped}
    return data


def calibration_report(report: CalibrationReport, *, written: bool) -> str:
    """Per mode: out-of-sample reliability of P(relevant) and the auto stopping threshold."""
    lines = [
        "",
        f"calibrated P(relevant) on {report.n_queries} labeled queries, {report.folds}-fold "
        f"cross-validation by query (seed {report.seed}); ECE, log loss and Brier out of sample",
        f"{'mode':<9}  {'ECE':>6}  {'logloss':>7}  {'Brier':>6}  {'base':>6}  {'chunks':>7}  "
        f"{'stop t':>6}  {'labels':>6}  net value/query  t from",
    ]
    lines += [
        f"{c.mode:<9}  {c.ece:>6.4f}  {c.log_loss:>7.4f}  {c.brier:>6.4f}  {c.base_rate:>6.4f}  "
        f"{c.n_chunks:>7}  {c.threshold:>6.3f}  {c.label_threshold:>6.3f}  "
        f"{c.net_value:>7.0f} ± {c.net_value_se:<5.0f}  {c.threshold_rule}"
        for c in report.calibrations
    ]
    lines += [f"{mode:<9}  not calibrated: {why}" for mode, why in report.skipped.items()]
    if report.calibrations:
        c = report.calibrations[0]
        lines.append(
            f"cost model: t = min(1, n x (1 + (T - 1) x c) / V) = {c.chunk_tokens:.0f} x "
            f"(1 + {c.turns - 1} x {c.cache_factor:g}) / {c.value:g} = {c.cost_threshold:.3f}; "
            "labels: the t with the best mean net value per query (P out of sample); the cost "
            "model's t is kept unless it lags that by more than one standard error"
        )
    lines.append(
        "written to the index: select --stop auto keeps a chunk of m tokens while "
        "P >= t x (m / n) x (1 + the relevant chunks expected above)"
        if written
        else "dry run: nothing was written to the index"
    )
    return "\n".join(lines)

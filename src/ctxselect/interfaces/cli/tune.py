"""The ``tune`` command: fit the hybrid fusion of an index on labeled queries."""

from __future__ import annotations

import click

from ctxselect import config
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.main import cli, emit_json, index_option, json_option
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.store import wait_option
from ctxselect.tuning import DEFAULT_FOLDS, DEFAULT_METRIC, tune_index


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
    dry_run: bool,
    index: str | None,
    wait: float,
    as_json: bool,
) -> None:
    """Tune how hybrid fuses keyword and dense rankings, on labeled queries.

    Tries RRF and convex fusion settings with k-fold cross-validation: the figure
    reported is out of sample (each query scored by the setting tuned on the other
    folds), next to keyword, dense and plain RRF on the same queries. The setting
    tuned on all queries is stored in the index (search, select and the MCP server use
    it for hybrid), and hybrid becomes the default mode when it beats keyword alone.
    The index needs dense vectors (`ctxselect index --embedder NAME`).
    """
    report = tune_index(
        index,
        queries,
        qrels,
        folds=folds,
        seed=seed,
        metric=metric,
        write=not dry_run,
        wait=wait,
    )
    emit_json(report) if as_json else click.echo(render.tuning_report(report, written=not dry_run))

"""Measuring commands: eval and lab."""

from __future__ import annotations

import click

from ctxselect import experiments
from ctxselect.config import DEFAULT_MODE
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.commands import chunk_options, chunk_spec
from ctxselect.interfaces.cli.main import choices, cli, emit_json, json_option, progress_enabled


def int_list(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, ...]:
    """Parse "400,800,1600" into integers, with a usage error on bad input."""
    if value is None:
        return ()
    try:
        return tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated whole numbers, got {value!r}") from None


@cli.command("eval")
@click.option("--corpus", required=True, type=click.Path(), help="Folder, files or corpus.jsonl.")
@click.option("--queries", required=True, type=click.Path(), help="BEIR queries.jsonl.")
@click.option("--qrels", required=True, type=click.Path(), help="BEIR qrels TSV or TREC qrels.")
@click.option("--mode", default=DEFAULT_MODE, show_default=True, help=choices("mode") + ".")
@click.option(
    "--metrics", default="ndcg@10,recall@100", show_default=True, help="Comma-separated name@k."
)
@click.option("--index", default=None, metavar="DIR", help="Index folder to build or reuse.")
@click.option("--run-out", type=click.Path(), default=None, help="Write the TREC run here.")
@click.option("--per-query", is_flag=True, help="Include per-query values (with --json).")
@chunk_options
@json_option
def eval_cmd(
    corpus: str,
    queries: str,
    qrels: str,
    mode: str,
    metrics: str,
    index: str | None,
    run_out: str | None,
    per_query: bool,
    chunker: str | None,
    size: int | None,
    overlap: int | None,
    tokenizer: str | None,
    as_json: bool,
) -> None:
    """Index a corpus (or reuse its index), run every query, print trec_eval metrics."""
    result = experiments.evaluate_corpus(
        corpus,
        queries,
        qrels,
        mode=mode,
        metrics=metrics,
        index=index,
        chunk=chunk_spec(chunker, size, overlap, tokenizer),
        run_out=run_out,
        per_query=per_query,
        progress=progress_enabled(),
    )
    emit_json(result) if as_json else click.echo(render.eval_result(result))


@cli.command()
@click.option("--corpus", required=True, type=click.Path(), help="Folder of documents.")
@click.option("--queries", required=True, type=click.Path(), help='JSONL of {"query", "label"}.')
@click.option("--sizes", callback=int_list, default=None, help="Chunk sizes in characters.")
@click.option("--budgets", callback=int_list, default=None, help="Budgets in tokens.")
@click.option(
    "--budget-chunk-chars",
    type=int,
    default=experiments.LAB_BUDGET_CHUNK_CHARS,
    show_default=True,
    help="Chunk size of the budget table.",
)
@click.option("--mode", default=experiments.LAB_MODE, show_default=True, help=choices("mode") + ".")
@click.option(
    "--packer", default=experiments.LAB_PACKER, show_default=True, help=choices("packer") + "."
)
@click.option(
    "--tokenizer",
    default=experiments.LAB_TOKENIZER,
    show_default=True,
    help=choices("tokenizer") + ".",
)
@json_option
def lab(
    corpus: str,
    queries: str,
    sizes: tuple[int, ...],
    budgets: tuple[int, ...],
    budget_chunk_chars: int,
    mode: str,
    packer: str,
    tokenizer: str,
    as_json: bool,
) -> None:
    """Run the chunk-size sweep and the budget table on a labeled corpus."""
    report = experiments.run_lab(
        corpus,
        queries,
        sizes=sizes or experiments.LAB_SIZES,
        budgets=budgets or experiments.LAB_BUDGETS,
        budget_chunk_chars=budget_chunk_chars,
        mode=mode,
        packer=packer,
        tokenizer=tokenizer,
    )
    emit_json(report) if as_json else click.echo(render.lab_report(report))

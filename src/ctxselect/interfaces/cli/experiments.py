"""Measuring commands: eval, lab and compare.

``sweep`` and ``cost`` are in :mod:`~ctxselect.interfaces.cli.sweep`; importing this
module registers them too.
"""

from __future__ import annotations

import click

from ctxselect import config
from ctxselect.api import evaluate
from ctxselect.config import DEFAULT_FORMAT, DEFAULT_MODE, DEFAULT_PACKER, ChunkSpec
from ctxselect.interfaces.cli import render_measure
from ctxselect.interfaces.cli.group import (
    choices,
    cli,
    emit_json,
    filter_options,
    json_option,
    progress_enabled,
    registered,
)
from ctxselect.interfaces.cli.numbers import number, number_list
from ctxselect.interfaces.cli.options import (
    DENSE_EXTRA,
    LEVEL_HELP,
    built_settings,
    check_stop_option,
    chunk_spec,
    embedder_choices,
    in_memory_embedder_help,
    index_chunk_options,
    name_option,
)
from ctxselect.interfaces.cli.sweep import BUDGETS_HELP, select_budgets


@cli.command("eval")
@click.option("--corpus", required=True, type=click.Path(), help="Folder, files or corpus.jsonl.")
@click.option(
    "--queries", required=True, type=click.Path(), help="BEIR queries.jsonl, or lab JSONL."
)
@click.option("--qrels", type=click.Path(), default=None, help="BEIR qrels TSV or TREC qrels.")
@click.option("--spans", type=click.Path(), default=None, help="Span labels JSONL (not qrels).")
@click.option(
    "--mode",
    default=DEFAULT_MODE,
    show_default=True,
    callback=registered("mode"),
    help=choices("mode") + " (dense and hybrid need --embedder).",
)
@click.option(
    "--metrics",
    default="ndcg@10,recall@100",
    show_default=True,
    help="Comma-separated name@k, and budget metrics such as recall@2000t.",
)
@click.option(
    "--budgets",
    callback=select_budgets,
    default=None,
    help=f"Token budgets, e.g. 500,1000,2000 ({BUDGETS_HELP}).",
)
@click.option("--level", default="doc", show_default=True, help=LEVEL_HELP)
@name_option("packer", DEFAULT_PACKER, choices("packer") + " (budgets).")
@name_option("format", DEFAULT_FORMAT, choices("format") + ".")
@click.option("--index", default=None, metavar="DIR", help="Index folder to build or reuse.")
@click.option(
    "--embedder",
    default=None,
    metavar="NAME",
    help=f"Embed the chunks for --mode dense or hybrid: {embedder_choices()} (default: the "
    f"index's own). minilm needs `{DENSE_EXTRA}`.",
)
@click.option("--run-out", type=click.Path(), default=None, help="Write the TREC run here.")
@click.option(
    "--depth",
    type=number(config.RUN_DEPTH),
    default=None,
    help=f"Documents (chunks with --level chunk) per query in the run that is scored and "
    f"written (default {evaluate.DEFAULT_RUN_DEPTH}, trec_eval's convention, or the "
    f"largest k of --metrics if deeper).",
)
@click.option(
    "--per-query", type=click.Path(), default=None, help="Write per-query values (JSONL) here."
)
@click.option(
    "--stop",
    default="none",
    show_default=True,
    callback=check_stop_option,
    help="How the --budgets selections stop: none (fill the budget), auto or a P(relevant) "
    "threshold from 0 to 1, calibrated out of sample (5 folds by query) on these labels.",
)
@click.option(
    "--stored-calibration",
    is_flag=True,
    help="Stop with the index's stored calibration instead (it may have seen these labels).",
)
@filter_options
@index_chunk_options
@json_option
def eval_cmd(
    corpus: str,
    queries: str,
    qrels: str | None,
    spans: str | None,
    mode: str,
    metrics: str,
    budgets: tuple[int, ...],
    level: str,
    packer: str,
    fmt: str,
    index: str | None,
    embedder: str | None,
    run_out: str | None,
    depth: int | None,
    per_query: str | None,
    stop: str | float,
    stored_calibration: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    where: tuple[str, ...],
    chunker: str | None,
    size: int | None,
    overlap: int | None,
    tokenizer: str | None,
    as_json: bool,
) -> None:
    """Index a corpus (or reuse its index), run every query, print trec_eval metrics.

    With --budgets, also select under each budget as `select` does and print
    recall@Bt (fraction of relevant documents selected), hit@Bt (answer in context),
    relevant-tokens@Bt, tokens_used@Bt (mean tokens sent) and chunks@Bt. With --stop
    auto or P, selections stop early as `select --stop` does; P(relevant) is fitted out
    of sample (each query scored by a model fitted on the other folds' queries), never
    on the queries it scores, unless --stored-calibration. --include, --exclude and
    --where restrict every ranking as in `search` (judgments are not filtered).

    Without --index, each corpus and set of chunk flags gets its own index under
    .ctxselect/eval, and a flag left out is the default. With --index DIR, the chunk
    flags work as for `index`: a flag left out keeps DIR's own setting (the defaults
    if DIR holds no index yet), and a changed setting rebuilds DIR.
    """
    flags = (chunker, size, overlap, tokenizer)
    result = evaluate.evaluate_corpus(
        corpus,
        queries,
        qrels,
        spans=spans,
        mode=mode,
        metrics=metrics,
        budgets=budgets,
        level=level,
        packer=packer,
        format=fmt,
        index=index,
        chunk=chunk_spec(*flags, _index_chunk(index, flags)),
        run_out=run_out,
        depth=depth,
        per_query_out=per_query,
        progress=progress_enabled(),
        embedder=embedder,
        stop=stop,
        stored_calibration=stored_calibration,
        include=include,
        exclude=exclude,
        where=where,
    )
    emit_json(result) if as_json else click.echo(render_measure.eval_result(result))


def _index_chunk(index: str | None, flags: tuple[object, ...]) -> ChunkSpec | None:
    """The chunking ``--index`` was built with, when a chunk flag was given (a flag left
    out keeps the index's own value, as with ``index``); None otherwise."""
    built = built_settings(index) if any(f is not None for f in flags) else None
    return built[0] if built else None


@cli.command()
@click.option("--corpus", required=True, type=click.Path(), help="Folder of documents.")
@click.option("--queries", required=True, type=click.Path(), help='JSONL of {"query", "label"}.')
@click.option(
    "--sizes",
    callback=number_list(config.CHUNK_SIZE),
    default=None,
    help="Chunk sizes in characters.",
)
@click.option(
    "--budgets", callback=select_budgets, default=None, help=f"Budgets in tokens ({BUDGETS_HELP})."
)
@click.option(
    "--budget-chunk-chars",
    type=number(config.CHUNK_SIZE),
    default=evaluate.LAB_BUDGET_CHUNK_CHARS,
    show_default=True,
    help="Chunk size of the budget table.",
)
@click.option(
    "--mode",
    default=evaluate.LAB_MODE,
    show_default=True,
    callback=registered("mode"),
    help=choices("mode") + " (dense and hybrid need --embedder).",
)
@name_option("packer", evaluate.LAB_PACKER, choices("packer") + ".")
@name_option("tokenizer", evaluate.LAB_TOKENIZER, choices("tokenizer") + ".")
@click.option(
    "--embedder",
    default=None,
    metavar="NAME",
    help=in_memory_embedder_help("--mode dense or hybrid"),
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
    embedder: str | None,
    as_json: bool,
) -> None:
    """Run the chunk-size sweep and the budget table on a labeled corpus.

    Retrievers are built in memory; with --mode dense or hybrid, each distinct chunk
    and query is embedded once per run.
    """
    report = evaluate.run_lab(
        corpus,
        queries,
        sizes=sizes or evaluate.LAB_SIZES,
        budgets=budgets or evaluate.LAB_BUDGETS,
        budget_chunk_chars=budget_chunk_chars,
        mode=mode,
        packer=packer,
        tokenizer=tokenizer,
        embedder=embedder,
    )
    emit_json(report) if as_json else click.echo(render_measure.lab_report(report))


@cli.command()
@click.argument("run_a", type=click.Path())
@click.argument("run_b", type=click.Path())
@click.option("--qrels", required=True, type=click.Path(), help="BEIR qrels TSV or TREC qrels.")
@click.option(
    "--metrics", default="ndcg@10,recall@100", show_default=True, help="Comma-separated name@k."
)
@click.option(
    "--permutations",
    type=int,
    default=evaluate.DEFAULT_PERMUTATIONS,
    show_default=True,
    help="Random sign assignments per metric.",
)
@click.option(
    "--seed",
    type=number(config.SEED),
    default=evaluate.DEFAULT_SEED,
    show_default=True,
    help="Random seed.",
)
@json_option
def compare(
    run_a: str,
    run_b: str,
    qrels: str,
    metrics: str,
    permutations: int,
    seed: int,
    as_json: bool,
) -> None:
    """Compare TREC runs RUN_A and RUN_B: paired differences, randomization test, wins."""
    result = evaluate.compare_run_files(
        run_a,
        run_b,
        qrels,
        metrics=metrics,
        permutations=permutations,
        seed=seed,
    )
    emit_json(result) if as_json else click.echo(render_measure.comparison(result))

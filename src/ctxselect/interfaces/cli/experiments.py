"""Measuring commands: eval, lab, sweep, cost and compare."""

from __future__ import annotations

import click

from ctxselect import config
from ctxselect.api import evaluate
from ctxselect.api import sweep as sweeps
from ctxselect.config import DEFAULT_FORMAT, DEFAULT_MODE, DEFAULT_PACKER
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.commands import (
    DENSE_EXTRA,
    check_stop_option,
    chunk_options,
    chunk_spec,
    embedder_choices,
)
from ctxselect.interfaces.cli.main import (
    choices,
    cli,
    emit_json,
    filter_options,
    json_option,
    progress_enabled,
)
from ctxselect.interfaces.cli.numbers import number, number_list

budget_list = number_list(config.BUDGET)


LEVEL_HELP = "doc: documents ranked by their best chunk; chunk: chunks judged directly."


def in_memory_embedder_help(what: str) -> str:
    """Help of --embedder for commands that build dense and hybrid in memory."""
    return (
        f"Embed chunks and queries for {what}: {choices('embedder')}. minilm needs "
        f"`{DENSE_EXTRA}`; hash is a fast model-free stand-in."
    )


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
    help=choices("mode") + " (dense and hybrid need --embedder).",
)
@click.option(
    "--metrics",
    default="ndcg@10,recall@100",
    show_default=True,
    help="Comma-separated name@k, and budget metrics such as recall@2000t.",
)
@click.option(
    "--budgets", callback=budget_list, default=None, help="Token budgets, e.g. 500,1000,2000."
)
@click.option("--level", default="doc", show_default=True, help=LEVEL_HELP)
@click.option(
    "--packer",
    default=DEFAULT_PACKER,
    show_default=True,
    help=choices("packer") + " (budgets).",
)
@click.option(
    "--format", "fmt", default=DEFAULT_FORMAT, show_default=True, help=choices("format") + "."
)
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
@chunk_options
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
    """
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
        chunk=chunk_spec(chunker, size, overlap, tokenizer),
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
    emit_json(result) if as_json else click.echo(render.eval_result(result))


@cli.command()
@click.option("--corpus", required=True, type=click.Path(), help="Folder of documents.")
@click.option("--queries", required=True, type=click.Path(), help='JSONL of {"query", "label"}.')
@click.option(
    "--sizes",
    callback=number_list(config.CHUNK_SIZE),
    default=None,
    help="Chunk sizes in characters.",
)
@click.option("--budgets", callback=budget_list, default=None, help="Budgets in tokens.")
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
    help=choices("mode") + " (dense and hybrid need --embedder).",
)
@click.option(
    "--packer", default=evaluate.LAB_PACKER, show_default=True, help=choices("packer") + "."
)
@click.option(
    "--tokenizer",
    default=evaluate.LAB_TOKENIZER,
    show_default=True,
    help=choices("tokenizer") + ".",
)
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
    emit_json(report) if as_json else click.echo(render.lab_report(report))


@cli.command()
@click.option("--corpus", required=True, type=click.Path(), help="Folder, files or corpus.jsonl.")
@click.option(
    "--queries", required=True, type=click.Path(), help="BEIR queries.jsonl, or lab JSONL."
)
@click.option("--qrels", type=click.Path(), default=None, help="BEIR qrels TSV or TREC qrels.")
@click.option("--spans", type=click.Path(), default=None, help="Span labels JSONL (not qrels).")
@click.option("--grid", "grid_file", type=click.Path(), default=None, help="Grid TOML file.")
@click.option("--chunkers", default=None, help=f"Comma-separated: {choices('chunker')}.")
@click.option(
    "--sizes",
    multiple=True,
    help="Chunk sizes for every chunker (128,256,512) or one (paragraph:800,1600); repeatable.",
)
@click.option(
    "--modes",
    default=None,
    help=f"Comma-separated: {choices('mode')} (dense and hybrid need --embedder).",
)
@click.option("--packers", default=None, help=f"Comma-separated: {choices('packer')}.")
@click.option("--budgets", callback=budget_list, default=None, help="Token budgets, e.g. 250,500.")
@click.option(
    "--stops",
    default=None,
    help="Comma-separated stop rules: none (fill the budget), auto, or P(relevant) "
    "thresholds; calibrated out of sample, 5 folds by query (default none).",
)
@click.option("--tokenizer", default=None, help=f"{choices('tokenizer')} (default cl100k).")
@click.option("--format", "fmt", default=None, help=f"{choices('format')} (default markdown).")
@click.option(
    "--embedder",
    default=None,
    metavar="NAME",
    help=in_memory_embedder_help("the modes dense and hybrid")
    + " Vectors are kept in the results folder.",
)
@click.option("--level", default="doc", show_default=True, help=LEVEL_HELP)
@click.option(
    "--metrics",
    default=",".join(sweeps.SWEEP_METRICS),
    show_default=True,
    help="Ranking metrics (name@k).",
)
@click.option(
    "--knee-metric",
    type=click.Choice(sweeps.KNEE_METRICS),
    default=sweeps.DEFAULT_KNEE_METRIC,
    show_default=True,
    help="Find knees on recall@Bt (fraction of relevant documents selected) or hit@Bt "
    "(answer in context).",
)
@click.option(
    "--gain-per-1k",
    type=float,
    default=sweeps.DEFAULT_GAIN_PER_1K,
    show_default=True,
    help="Least knee-metric gain per 1,000 tokens sent once; the knee's "
    "δ = gain × (1 + (T - 1) × c).",
)
@click.option(
    "--epsilon",
    type=float,
    default=sweeps.DEFAULT_EPSILON,
    show_default=True,
    help="Differences in the knee metric treated as ties between configurations.",
)
@click.option(
    "--turns", type=int, default=sweeps.DEFAULT_TURNS, show_default=True, help="Turns T (cost)."
)
@click.option(
    "--cache-factor",
    type=float,
    default=sweeps.CACHED_FACTOR,
    show_default=True,
    help="Price factor c of re-sent tokens (cost).",
)
@click.option("--out", default=None, metavar="DIR", help="Results folder (reused on re-runs).")
@click.option("--name", default=None, help="Dataset name in the report (default: folder name).")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots (no matplotlib needed).")
@click.option(
    "--recommend", is_flag=True, help="Print only the recommended budget (the overall knee)."
)
@json_option
def sweep(
    corpus: str,
    queries: str,
    qrels: str | None,
    spans: str | None,
    grid_file: str | None,
    chunkers: str | None,
    sizes: tuple[str, ...],
    modes: str | None,
    packers: str | None,
    budgets: tuple[int, ...],
    stops: str | None,
    tokenizer: str | None,
    fmt: str | None,
    embedder: str | None,
    level: str,
    metrics: str,
    knee_metric: str,
    gain_per_1k: float,
    epsilon: float,
    turns: int,
    cache_factor: float,
    out: str | None,
    name: str | None,
    no_plots: bool,
    recommend: bool,
    as_json: bool,
) -> None:
    """Sweep chunker x size x mode x packer x budget x stop; write results, plots, report.html.

    Prints the tables in the lab's layout (stdout) and where the report is (stderr).
    Re-running with the same --out reuses every configuration already measured. Dense
    and hybrid (--embedder) keep their vectors there too; another embedder measures
    them again. --stops none,auto also measures selections that stop early, and the
    report plots recall against mean tokens used for each stop rule.
    """
    grid = sweeps.sweep_grid(
        grid_file,
        chunkers=chunkers,
        sizes=sizes,
        modes=modes,
        packers=packers,
        budgets=budgets,
        tokenizer=tokenizer,
        format=fmt,
        stops=stops,
    )
    report = sweeps.run_sweep(
        corpus,
        queries,
        qrels=qrels,
        spans=spans,
        grid=grid,
        out=out,
        name=name,
        level=level,
        metrics=metrics,
        epsilon=epsilon,
        turns=turns,
        cache_factor=cache_factor,
        knee_metric=knee_metric,
        gain_per_1k=gain_per_1k,
        embedder=embedder,
        plots=not no_plots,
        progress=progress_enabled(),
    )
    if recommend:
        data = render.recommendation_data(report)
        emit_json(data) if as_json else click.echo(data["budget"])
    else:
        emit_json(report) if as_json else click.echo(sweeps.sweep_tables(report), nl=False)
    click.echo(render.sweep_footer(report), err=True)


@cli.command()
@click.option("--budget", type=number(config.BUDGET), required=True, help="Tokens selected (B).")
@click.option(
    "--turns",
    type=int,
    default=sweeps.DEFAULT_TURNS,
    show_default=True,
    help="Turns the context stays, the first included.",
)
@click.option(
    "--cache-factor",
    type=float,
    default=sweeps.CACHED_FACTOR,
    show_default=True,
    help="Price of a re-sent token: 0.1 cached, 1.0 uncached.",
)
@click.option(
    "--knee", type=number(config.BUDGET), default=None, help="Knee of the budget sweep (surplus)."
)
@json_option
def cost(budget: int, turns: int, cache_factor: float, knee: int | None, as_json: bool) -> None:
    """Print the tokens a selection is billed over a session: B x (1 + (T - 1) x c).

    With --knee K, also the surplus over the knee: (B - K) x (1 + (T - 1) x c).
    """
    result = evaluate.session_cost(budget, turns, cache_factor, knee)
    emit_json(result) if as_json else click.echo(render.session_cost(result))


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
    emit_json(result) if as_json else click.echo(render.comparison(result))

"""Budget-choosing commands: sweep (measure a grid, find each knee) and cost (bill a budget)."""

from __future__ import annotations

import click

from ctxselect import config
from ctxselect.api import evaluate
from ctxselect.api import sweep as sweeps
from ctxselect.errors import ConfigError
from ctxselect.interfaces.cli import render_measure
from ctxselect.interfaces.cli.group import (
    choices,
    cli,
    emit_json,
    json_option,
    progress_enabled,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.options import (
    LEVEL_HELP,
    budget_list,
    in_memory_embedder_help,
    name_option,
)


def select_budgets(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[int, ...]:
    """Parse ``--budgets 500,1000``, refusing a budget ``select`` refuses (a usage error
    with ``select --budget``'s words): a smaller one would measure selections never made."""
    budgets: tuple[int, ...] = budget_list(ctx, param, value)
    for budget in budgets:
        try:
            config.check_budget_range(budget)
        except ConfigError as exc:
            raise click.BadParameter(f"{exc} (in the comma-separated list {value!r})") from None
    return budgets


BUDGETS_HELP = f"each from {config.MIN_BUDGET} tokens, as select takes"


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
@click.option(
    "--budgets",
    callback=select_budgets,
    default=None,
    help=f"Token budgets, e.g. 250,500 ({BUDGETS_HELP}).",
)
@click.option(
    "--stops",
    default=None,
    help="Comma-separated stop rules: none (fill the budget), auto, or P(relevant) "
    "thresholds; calibrated out of sample, 5 folds by query (default none).",
)
@name_option("tokenizer", None, f"{choices('tokenizer')} (default cl100k).")
@name_option("format", None, f"{choices('format')} (default markdown).")
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
    "--turns",
    type=number(config.TURNS),
    default=sweeps.DEFAULT_TURNS,
    show_default=True,
    help="Turns T (cost).",
)
@click.option(
    "--cache-factor",
    type=number(config.CACHE_FACTOR),
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
    refused = sweeps.no_recommendation(report)
    if recommend and refused:  # the results are written: only the recommendation fails
        raise ConfigError(f"{refused} (what was measured is kept in {report.out})")
    if recommend:
        data = render_measure.recommendation_data(report)
        emit_json(data) if as_json else click.echo(data["budget"])
    else:
        emit_json(report) if as_json else click.echo(sweeps.sweep_tables(report), nl=False)
    click.echo(render_measure.sweep_footer(report), err=True)


@cli.command()
@click.option("--budget", type=number(config.BUDGET), required=True, help="Tokens selected (B).")
@click.option(
    "--turns",
    type=number(config.TURNS),
    default=sweeps.DEFAULT_TURNS,
    show_default=True,
    help="Turns the context stays, the first included.",
)
@click.option(
    "--cache-factor",
    type=number(config.CACHE_FACTOR),
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
    emit_json(result) if as_json else click.echo(render_measure.session_cost(result))

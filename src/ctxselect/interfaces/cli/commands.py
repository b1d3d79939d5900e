"""Index and read-path commands: index, search, select, explain, chunk, info."""

from __future__ import annotations

import json
from typing import Any

import click

from ctxselect import api, config
from ctxselect.agent import DEFAULT_BUDGET, MIN_BUDGET, line_ranges
from ctxselect.api import modes, write
from ctxselect.api.project import ProjectConfig
from ctxselect.api.watch import watch_paths
from ctxselect.config import (
    DEFAULT_ANN_THRESHOLD,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_CHUNKER,
    DEFAULT_FORMAT,
    DEFAULT_K,
    DEFAULT_PACKER,
    DEFAULT_TOKENIZER,
    DEFAULT_WATCH_INTERVAL,
    BM25Params,
    ChunkSpec,
)
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.main import (
    F,
    check_budget,
    choices,
    cli,
    emit_json,
    filter_options,
    index_option,
    json_option,
    mode_option,
    progress_enabled,
    to_jsonable,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.project import render_sources, setting_sources
from ctxselect.interfaces.cli.store import (
    follow_symlinks_option,
    report_extra,
    wait_option,
)
from ctxselect.types import IndexReport

DENSE_EXTRA = "pip install 'ctxselect[dense]'"


def embedder_choices() -> str:
    """Registered embedder names plus ``none``, for help texts."""
    return ", ".join([*api.names("embedder"), "none"])


def check_stop_option(_ctx: click.Context, param: click.Parameter, value: str) -> str | float:
    """Turn a bad --stop into a usage error listing the valid values."""
    from ctxselect.errors import ConfigError

    try:
        return api.check_stop(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param=param) from None


def check_mmr(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    """Refuse an MMR λ outside [0, 1] as a usage error, with the sessions' message."""
    from ctxselect.agent import check_mmr as check
    from ctxselect.errors import ConfigError

    try:
        return check(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None


def mmr_option(func: F) -> F:
    """Add ``--mmr LAMBDA`` (diversity-aware reordering of the ranked chunks)."""
    return click.option(
        "--mmr",
        type=float,
        default=None,
        metavar="LAMBDA",
        callback=check_mmr,
        help="Reorder the ranked chunks by maximal marginal relevance with this LAMBDA from 0 "
        "to 1 (1: relevance only; lower: fewer near-duplicates). Needs dense vectors (index "
        "--embedder).",
    )(func)


def rerank_option(func: F) -> F:
    """Add ``--rerank-model PATH`` (a cross-encoder on disk)."""
    return click.option(
        "--rerank-model",
        type=click.Path(),
        default=None,
        metavar="PATH",
        help="Rerank the ranked chunks with the cross-encoder saved in this folder first "
        "(config.json, weights, tokenizer; needs pip install 'ctxselect[rerank]').",
    )(func)


def chunk_options(func: F) -> F:
    """Add the chunking flags shared by ``index``, ``chunk`` and ``eval``."""
    func = click.option(
        "--chunker", default=None, help=f"{choices('chunker')} (default {DEFAULT_CHUNKER})."
    )(func)
    func = click.option(
        "--size",
        type=number(config.CHUNK_SIZE),
        default=None,
        help=f"Chunk size: tokens, or characters for paragraph (default {DEFAULT_CHUNK_SIZE}).",
    )(func)
    func = click.option(
        "--overlap", type=number(config.OVERLAP), default=None, help="Overlap in tokens."
    )(func)
    return click.option(
        "--tokenizer", default=None, help=f"{choices('tokenizer')} (default {DEFAULT_TOKENIZER})."
    )(func)


def chunk_spec(
    chunker: str | None, size: int | None, overlap: int | None, tokenizer: str | None
) -> ChunkSpec | None:
    """Build a ChunkSpec from flags, or None when no flag was given (keep the index's)."""
    if chunker is None and size is None and overlap is None and tokenizer is None:
        return None
    default = ChunkSpec()
    return ChunkSpec(
        chunker=chunker or DEFAULT_CHUNKER,
        size=size if size is not None else DEFAULT_CHUNK_SIZE,
        overlap=overlap if overlap is not None else 0,
        tokenizer=tokenizer or default.tokenizer,
    )


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@index_option
@chunk_options
@click.option("--k1", type=number(config.K1), default=None, help="BM25 k1, 0-10 (default 1.5).")
@click.option("--b", "b", type=number(config.B), default=None, help="BM25 b, 0-1 (default 0.75).")
@click.option(
    "--identifiers/--no-identifiers",
    default=None,
    help="BM25 also indexes the parts of camelCase, snake_case and kebab-case identifiers "
    "(default: off; on lifts code retrieval). Milvus ranks bm25 on its server only without.",
)
@click.option(
    "--max-bytes",
    type=number(config.MAX_BYTES),
    default=write.DEFAULT_MAX_BYTES,
    help="Skip larger files.",
)
@click.option(
    "--embedder",
    default=None,
    metavar="NAME",
    help=f"Add dense vectors (modes {' and '.join(modes.embedding_modes())}) with this embedder: "
    f"{embedder_choices()} "
    f"(none drops them; default: the index's own, none for a new index). minilm needs "
    f"`{DENSE_EXTRA}`; hash is a fast model-free stand-in for tests.",
)
@click.option(
    "--ann-threshold",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=f"With dense vectors: build an HNSW graph from N embedded chunks on (default "
    f"{DEFAULT_ANN_THRESHOLD:,}; below it dense search is exact).",
)
@click.option(
    "--embed-long",
    type=click.Choice(modes.EMBED_LONG),
    default=None,
    help="How the embedder (--embedder, or the index's own) embeds a chunk longer than its "
    "model reads (minilm: 256 word pieces): truncate (only its start; the default) or "
    "windows (whole, as pooled windows; more embedding work). A change re-embeds the index.",
)
@follow_symlinks_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Chunk and embed new documents on N worker processes (1: in this process). The "
    "index is the same as with 1.",
)
@click.option(
    "--executor",
    type=click.Choice(write.executor_names()),
    default=write.DEFAULT_EXECUTOR,
    show_default=True,
    help="Where the workers run: local (processes on this machine) or ray (a Ray cluster; "
    "needs pip install 'ctxselect[ray]').",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDR",
    envvar="CTXSELECT_RAY_ADDRESS",
    help="With --executor ray: the cluster's address (ray://HOST:10001, HOST:6379, auto; "
    "env CTXSELECT_RAY_ADDRESS); default: a local Ray on 127.0.0.1.",
)
@click.option("--watch", is_flag=True, help="Keep re-indexing while files change (Ctrl-C ends).")
@click.option(
    "--interval",
    type=number(config.WATCH_INTERVAL),
    default=DEFAULT_WATCH_INTERVAL,
    show_default=True,
    metavar="SECONDS",
    help="With --watch: seconds between two looks at the files.",
)
@wait_option
@json_option
def index(
    paths: tuple[str, ...],
    index: str | None,
    chunker: str | None,
    size: int | None,
    overlap: int | None,
    tokenizer: str | None,
    k1: float | None,
    b: float | None,
    identifiers: bool | None,
    max_bytes: int,
    embedder: str | None,
    ann_threshold: int | None,
    embed_long: str | None,
    follow_symlinks: bool,
    workers: int,
    executor: str,
    ray_address: str | None,
    watch: bool,
    interval: float,
    wait: float,
    as_json: bool,
) -> None:
    """Index PATHS (files, folders, BEIR corpus.jsonl), touching only what changed.

    New, modified, deleted and renamed files are found by content hash; without PATHS
    the index's own roots are re-scanned. Searches keep working while it runs.
    With --embedder, chunks are also embedded (once: vectors are kept by content hash)
    for the dense and hybrid modes. With --workers N, chunking and embedding run on N
    processes (here, or on a Ray cluster with --executor ray); this one still writes.
    """
    bm25 = None
    if k1 is not None or b is not None or identifiers is not None:
        base = BM25Params()
        bm25 = BM25Params(
            k1=base.k1 if k1 is None else k1,
            b=base.b if b is None else b,
            identifiers=base.identifiers if identifiers is None else identifiers,
        )
    options: dict[str, Any] = dict(  # the keyword arguments of index_paths and watch_paths
        chunk=chunk_spec(chunker, size, overlap, tokenizer),
        bm25=bm25,
        max_bytes=max_bytes,
        embedder=embedder,
        ann_threshold=ann_threshold,
        embed_long=embed_long,
        follow_symlinks=follow_symlinks,
        workers=workers,
        executor=executor,
        ray_address=ray_address,
        progress=progress_enabled(),
        wait=wait,
    )

    def show(report: IndexReport) -> None:
        if as_json:
            click.echo(json.dumps(to_jsonable(report), ensure_ascii=False))  # one line per run
            return
        extra = report_extra(report)
        click.echo(render.index_report(report) + (f"\n{extra}" if extra else ""))

    if not watch:
        report = write.index_paths(paths, index, **options)
        emit_json(report) if as_json else show(report)
        return
    click.echo(f"watching every {interval:g} s; Ctrl-C stops", err=True)
    runs = watch_paths(paths, index, interval=interval, on_report=show, **options)
    click.echo(f"stopped watching after {runs} index run(s)", err=True)


@cli.command()
@click.argument("query")
@click.option(
    "-k", "k", type=number(config.K), default=DEFAULT_K, show_default=True, help="Hits to return."
)
@mode_option
@mmr_option
@rerank_option
@filter_options
@index_option
@json_option
def search(
    query: str,
    k: int,
    mode: str | None,
    mmr: float | None,
    rerank_model: str | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    where: tuple[str, ...],
    index: str | None,
    as_json: bool,
) -> None:
    """Rank chunks for QUERY and print the K best.

    With --mmr or --rerank-model the K chunks are reordered as `select` reorders its
    candidates. --include, --exclude and --where filter inside the ranking (K matching
    chunks come back when K score); an empty result says on stderr which filter did it.
    """
    filters = {"include": include, "exclude": exclude, "where": where}
    with api.open_index(index) as idx:
        hits = idx.rank(query, k, mode, mmr=mmr, rerank_model=rerank_model, **filters)
        lines = [] if as_json else line_ranges(idx, [(h.doc_id, h.start, h.end) for h in hits])
        note = "" if hits else idx.filter_note(**filters)
    emit_json(hits) if as_json else click.echo(render.hits(hits, lines))
    if note:
        click.echo(f"no hits: {note}", err=True)


@cli.command()
@click.argument("query")
@click.option(
    "--budget",
    type=int,
    default=DEFAULT_BUDGET,
    show_default=True,
    callback=check_budget,
    help=f"Token budget, framing included (at least {MIN_BUDGET}, as in MCP select).",
)
@click.option("--packer", default=DEFAULT_PACKER, show_default=True, help=choices("packer") + ".")
@click.option(
    "--format", "fmt", default=DEFAULT_FORMAT, show_default=True, help=choices("format") + "."
)
@click.option("-k", "k", type=number(config.K), default=None, help="Ranked chunks to consider.")
@mode_option
@mmr_option
@click.option(
    "--promote",
    is_flag=True,
    help="Send a whole section instead of its selected chunks when at least two, and half, "
    "of its chunks were selected and the section fits (markdown sections).",
)
@rerank_option
@click.option(
    "--stop",
    default=api.DEFAULT_STOP,
    show_default=True,
    callback=check_stop_option,
    help="Where to stop: auto (the threshold `tune` stored, else the largest score gap, "
    "uncalibrated), none (fill the budget), or a P(relevant) threshold from 0 to 1.",
)
@filter_options
@index_option
@json_option
def select(
    query: str,
    budget: int,
    packer: str,
    fmt: str,
    k: int | None,
    mode: str | None,
    mmr: float | None,
    promote: bool,
    rerank_model: str | None,
    stop: str | float,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    where: tuple[str, ...],
    index: str | None,
    as_json: bool,
) -> None:
    """Select the best chunks for QUERY within BUDGET tokens and print the context.

    The budget is a cap: with --stop auto (the default) selection stops earlier where
    the next chunk is unlikely to be relevant; the summary says why it stopped.
    """
    with api.open_index(index) as idx:
        selection = idx.select(
            query,
            budget,
            mode=mode,
            packer=packer,
            format=fmt,
            k=k,
            mmr=mmr,
            promote=promote,
            rerank_model=rerank_model,
            stop=stop,
            include=include,
            exclude=exclude,
            where=where,
        )
        context = idx.render(selection, fmt)
        spans = [(c.doc_id, c.start, c.end) for c in selection.chunks]
        lines = [] if as_json else line_ranges(idx, spans)
    if as_json:
        emit_json(selection)
        return
    click.echo(context, nl=False)
    click.echo(render.selection_summary(selection, lines), err=True)


@cli.command()
@click.argument("query")
@click.option("--chunk-id", default=None, help="Chunk to explain (default: the top K hits).")
@click.option(
    "-k", "k", type=number(config.K), default=3, show_default=True, help="Hits to explain."
)
@mode_option
@index_option
@json_option
def explain(
    query: str, chunk_id: str | None, k: int, mode: str | None, index: str | None, as_json: bool
) -> None:
    """Show how each query term contributes to a chunk's score."""
    with api.open_index(index) as idx:
        if chunk_id:
            explanations = [idx.explain(query, chunk_id, mode)]
        else:
            explanations = idx.explain_top(query, k, mode)
    if as_json:
        emit_json(explanations[0] if chunk_id else explanations)
        return
    click.echo(render.explanations(explanations))


@cli.command("chunk")
@click.argument("file", type=click.Path())
@chunk_options
@json_option
def chunk_cmd(
    file: str,
    chunker: str | None,
    size: int | None,
    overlap: int | None,
    tokenizer: str | None,
    as_json: bool,
) -> None:
    """Chunk FILE and print its chunks with offsets and token counts (indexes nothing)."""
    chunks = write.chunk_file(file, chunk_spec(chunker, size, overlap, tokenizer))
    emit_json(chunks) if as_json else click.echo(render.chunks(chunks))


@cli.command()
@index_option
@json_option
@click.pass_context
def info(ctx: click.Context, index: str | None, as_json: bool) -> None:
    """Show what an index holds, how it was built, and where each setting comes from.

    The settings block gives, for every project config key, the value the next command
    uses and its source: a flag, an environment variable, the config file (its path),
    the index manifest, or the built-in default.
    """
    with api.open_index(index) as idx:
        data, built = idx.info(), idx.settings
    found = (ctx.obj or {}).get("project") or ProjectConfig()
    sources = setting_sources(ctx, found, data.index, built)
    if as_json:
        emit_json({**to_jsonable(data), "sources": to_jsonable(sources)})
        return
    click.echo(render.info(data) + "\n" + render_sources(sources))

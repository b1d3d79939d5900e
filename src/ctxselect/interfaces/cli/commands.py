"""Read-path commands: search, select, explain, chunk, info.

``index`` is in :mod:`~ctxselect.interfaces.cli.indexing`; importing this module
registers it too, and the flags these commands share are in
:mod:`~ctxselect.interfaces.cli.options`.
"""

from __future__ import annotations

import warnings

import click

from ctxselect import api, config
from ctxselect.agent import DEFAULT_BUDGET, MIN_BUDGET, line_ranges
from ctxselect.api import chunking
from ctxselect.api.project import ProjectConfig
from ctxselect.config import DEFAULT_FORMAT, DEFAULT_K, DEFAULT_PACKER
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.group import (
    check_budget,
    choices,
    cli,
    emit_json,
    filter_options,
    index_option,
    json_option,
    mode_option,
    to_jsonable,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.options import (
    check_stop_option,
    chunk_options,
    chunk_spec,
    mmr_option,
    name_option,
    rerank_option,
)
from ctxselect.interfaces.cli.project import render_sources, setting_sources


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
    help=f"Token budget, framing included ({MIN_BUDGET} to {config.MAX_BUDGET:,}, as in MCP "
    "select).",
)
@name_option("packer", DEFAULT_PACKER, choices("packer") + ".")
@name_option("format", DEFAULT_FORMAT, choices("format") + ".")
@click.option("-k", "k", type=number(config.K), default=None, help="Ranked chunks to consider.")
@mode_option
@mmr_option
@click.option(
    "--promote/--no-promote",
    default=False,
    help="Send a whole section instead of its selected chunks when at least two, and half, "
    "of its chunks were selected and the section fits (markdown sections). --no-promote "
    "overrides promote = true in the project config file.",
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
@click.option(
    "--max-bytes",
    type=number(config.MAX_BYTES),
    default=chunking.DEFAULT_MAX_BYTES,
    help="Refuse larger files (index skips them).",
)
@json_option
def chunk_cmd(
    file: str,
    chunker: str | None,
    size: int | None,
    overlap: int | None,
    tokenizer: str | None,
    max_bytes: int,
    as_json: bool,
) -> None:
    """Chunk FILE and print its chunks with offsets and token counts (indexes nothing)."""
    spec = chunk_spec(chunker, size, overlap, tokenizer)
    with warnings.catch_warnings(record=True) as notes:  # empty file, code cut by tokens
        warnings.simplefilter("always", UserWarning)
        chunks = chunking.chunk_file(file, spec, max_bytes=max_bytes)
    for note in notes:
        click.echo(f"warning: {note.message}", err=True)
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

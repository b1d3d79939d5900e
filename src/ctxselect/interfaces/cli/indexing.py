"""The ``index`` command: build or update an index, once or while files change (--watch)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import click

from ctxselect import config
from ctxselect.api import modes, write
from ctxselect.api.watch import watch_paths
from ctxselect.api.write_inputs import check_embedder_name
from ctxselect.config import DEFAULT_ANN_THRESHOLD, DEFAULT_WATCH_INTERVAL, BM25Params
from ctxselect.errors import CtxselectError, UnknownNameError
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.group import (
    cli,
    emit_json,
    index_option,
    json_option,
    progress_enabled,
    to_jsonable,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.options import (
    DENSE_EXTRA,
    INDEX_DEFAULT,
    built_settings,
    chunk_spec,
    embedder_choices,
    index_chunk_options,
)
from ctxselect.interfaces.cli.store import (
    follow_symlinks_option,
    interruptible,
    report_extra,
    wait_option,
)
from ctxselect.types import IndexReport


def _known_embedder(param: click.Parameter, value: str | None) -> str | None:
    """Refuse an unknown --embedder as a usage error (exit 2) listing the valid names,
    before any index folder is made."""
    try:
        check_embedder_name(value)
    except UnknownNameError as exc:
        raise click.BadParameter(str(exc), param=param) from None
    return value


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@index_option
@index_chunk_options
@click.option(
    "--k1",
    type=number(config.K1),
    default=None,
    help=f"BM25 k1, 0-10 (default: {INDEX_DEFAULT}{BM25Params().k1:g}).",
)
@click.option(
    "--b",
    "b",
    type=number(config.B),
    default=None,
    help=f"BM25 b, 0-1 (default: {INDEX_DEFAULT}{BM25Params().b:g}).",
)
@click.option(
    "--identifiers/--no-identifiers",
    default=None,
    help="BM25 also indexes the parts of camelCase, snake_case and kebab-case identifiers "
    f"(default: {INDEX_DEFAULT}off; on lifts code retrieval). Milvus ranks bm25 on its "
    "server only without.",
)
@click.option(
    "--max-bytes",
    type=number(config.MAX_BYTES),
    default=None,
    help=f"Skip larger files (default: {INDEX_DEFAULT}{write.DEFAULT_MAX_BYTES:,}); the "
    "limit given is recorded. A document already indexed is kept, never removed, when "
    "its file is above the limit.",
)
@click.option(
    "--embedder",
    default=None,
    metavar="NAME",
    callback=lambda _ctx, param, value: _known_embedder(param, value),
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
    help=f"With dense vectors: build an HNSW graph from N embedded chunks on (default: "
    f"{INDEX_DEFAULT}{DEFAULT_ANN_THRESHOLD:,}; below it dense search is exact).",
)
@click.option(
    "--embed-long",
    type=click.Choice(modes.EMBED_LONG),
    default=modes.DEFAULT_INDEX_EMBED_LONG,
    show_default=True,
    help="How the embedder (--embedder, or the index's own) embeds a chunk longer than its "
    "model reads (minilm: 256 word pieces): truncate (only its start), windows (whole, as "
    "pooled windows; more embedding work) or auto (what the index records; for an embedder "
    "new to it, windows when most chunks are code, else truncate, chosen once). A change "
    "to windows or truncate re-embeds the index.",
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
@click.option(
    "--rebuild",
    is_flag=True,
    help="Re-chunk every document and write a new base even when nothing changed (cached "
    "vectors are reused): repairs an index whose base file verify finds damaged.",
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
@interruptible
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
    max_bytes: int | None,
    embedder: str | None,
    ann_threshold: int | None,
    embed_long: str,
    follow_symlinks: bool,
    workers: int,
    executor: str,
    ray_address: str | None,
    rebuild: bool,
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
    chunk, bm25 = None, None
    flags = (chunker, size, overlap, tokenizer, k1, b, identifiers)
    if any(flag is not None for flag in flags):
        built = built_settings(index)  # a flag left out keeps the index's own value
        chunk = chunk_spec(chunker, size, overlap, tokenizer, built[0] if built else None)
        bm25 = _bm25_params(k1, b, identifiers, built[1] if built else None)
    options: dict[str, Any] = dict(  # the keyword arguments of index_paths and watch_paths
        chunk=chunk,
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

    if rebuild and watch:
        raise click.UsageError("--rebuild rebuilds once: run it without --watch, then watch")
    if not watch:
        report = write.index_paths(paths, index, rebuild=rebuild, **options)
        emit_json(report) if as_json else show(report)
        return
    click.echo(f"watching every {interval:g} s; Ctrl-C stops", err=True)

    def warn(error: CtxselectError) -> None:  # a run that may pass: the watch goes on
        click.echo(f"error: {error} (watching on; the next run tries again)", err=True)

    runs = watch_paths(paths, index, interval=interval, on_report=show, on_error=warn, **options)
    click.echo(f"stopped watching after {runs} index run(s)", err=True)


def _bm25_params(
    k1: float | None, b: float | None, identifiers: bool | None, base: BM25Params | None
) -> BM25Params | None:
    """BM25 settings from the flags given, the others ``base``'s (the index's), else the
    defaults; None when no BM25 flag was given (the index keeps its own)."""
    if k1 is None and b is None and identifiers is None:
        return None
    keep = base or BM25Params()
    return dataclasses.replace(
        keep,
        k1=keep.k1 if k1 is None else k1,
        b=keep.b if b is None else b,
        identifiers=keep.identifiers if identifiers is None else identifiers,
    )

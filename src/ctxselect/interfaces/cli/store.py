"""Index maintenance commands: add, remove, compact, verify (and their text output)."""

from __future__ import annotations

import functools
from typing import Any, cast

import click

from ctxselect.api import maintain, write
from ctxselect.config import MAX_BYTES, WAIT
from ctxselect.interfaces.cli.group import (
    INTERRUPTED,
    F,
    cli,
    emit_json,
    index_option,
    json_option,
    progress_enabled,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.options import INDEX_DEFAULT
from ctxselect.interfaces.cli.render import counted
from ctxselect.types import CompactReport, IndexReport, VerifyReport


def interruptible(func: F) -> F:
    """Say what Ctrl-C left behind instead of click's bare ``Aborted!`` (exit 130).

    A write commits in one transaction, so an interrupted one leaves the index as the
    last completed write left it; vectors embedded before the interruption are kept, so
    running the command again resumes.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo(
                "interrupted: the index is as the last completed write left it (run `ctxselect "
                "verify` to check); run the same command again to finish: vectors already "
                "embedded are kept",
                err=True,
            )
            raise click.exceptions.Exit(INTERRUPTED) from None

    return cast(F, wrapper)


def wait_option(func: F) -> F:
    """Add ``--wait SECONDS`` (wait for another writer instead of failing at once)."""
    return click.option(
        "--wait",
        type=number(WAIT),
        default=0.0,
        show_default=True,
        metavar="SECONDS",
        help="Wait this long for another process writing the index, instead of failing.",
    )(func)


def follow_symlinks_option(func: F) -> F:
    """Add ``--follow-symlinks`` (read through links that lead outside the roots)."""
    return click.option(
        "--follow-symlinks",
        is_flag=True,
        help="Read through symlinks that lead outside the roots too (default: skip and name "
        "them). Not remembered: give it on every run that should read them.",
    )(func)


def report_extra(report: IndexReport) -> str:
    """Lines about renames and the compaction state that complete the index summary.

    "Up to date" only when the index is compacted after this run (a full rebuild or a
    compaction): a write that changed something otherwise leaves its rows in a delta
    segment, or (removals only) deleted rows that the next compaction drops.
    """
    lines = []
    if report.renamed:
        lines.append(f"renamed: {report.renamed} (same content, new path: chunks re-keyed)")
    if report.compacted:
        lines.append("status: up to date (compacted)")
    elif report.delta_segments:
        lines.append(
            f"status: changes kept in {report.delta_segments} delta segment(s), pending "
            "compaction (automatic past the threshold, or `ctxselect compact`)"
        )
    elif report.rebuilt:
        lines.append(
            "status: removed chunks stay as deleted rows, pending compaction (automatic "
            "past the threshold, or `ctxselect compact`)"
        )
    return "\n".join(lines)


def _summary(report: IndexReport) -> str:
    from ctxselect.interfaces.cli import render

    extra = report_extra(report)
    return render.index_report(report) + (f"\n{extra}" if extra else "")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@index_option
@click.option(
    "--max-bytes",
    type=number(MAX_BYTES),
    default=None,
    help=f"Skip larger files (default: {INDEX_DEFAULT}{write.DEFAULT_MAX_BYTES:,}); the "
    "limit given is recorded. A document already indexed is kept, never removed, when "
    "its file is above the limit.",
)
@follow_symlinks_option
@wait_option
@json_option
@interruptible
def add(
    paths: tuple[str, ...],
    index: str | None,
    max_bytes: int | None,
    follow_symlinks: bool,
    wait: float,
    as_json: bool,
) -> None:
    """Add or update the files PATHS in an index, leaving every other document alone."""
    report = write.add_paths(
        paths,
        index,
        max_bytes=max_bytes,
        wait=wait,
        progress=progress_enabled(),
        follow_symlinks=follow_symlinks,
    )
    emit_json(report) if as_json else click.echo(_summary(report))


@cli.command()
@click.argument("doc_ids", nargs=-1, required=True)
@index_option
@wait_option
@json_option
@interruptible
def remove(doc_ids: tuple[str, ...], index: str | None, wait: float, as_json: bool) -> None:
    """Remove the documents DOC_IDS (and their chunks) from an index."""
    report = write.remove_documents(doc_ids, index, wait=wait)
    emit_json(report) if as_json else click.echo(_summary(report))


@cli.command()
@index_option
@wait_option
@json_option
@interruptible
def compact(index: str | None, wait: float, as_json: bool) -> None:
    """Merge all segments into one: results then equal a full rebuild exactly."""
    report = maintain.compact_index(index, wait=wait)
    emit_json(report) if as_json else click.echo(compact_text(report))


def compact_text(report: CompactReport) -> str:
    """One line about a compaction."""
    if report.note:
        return f"{report.index}: {report.note} ({counted(report.chunks, 'chunk')})"
    return (
        f"{report.index}: {report.merged_segments} delta segment(s) merged, "
        f"{report.dropped_rows} deleted row(s) dropped, {counted(report.chunks, 'chunk')}, "
        f"{report.seconds:.2f} s"
    )


@cli.command()
@index_option
@json_option
@click.pass_context
def verify(ctx: click.Context, index: str | None, as_json: bool) -> None:
    """Check an index's integrity; exit 1 with the reason when it is damaged."""
    report = maintain.verify_index(index)
    if as_json:
        emit_json(report)
    else:
        click.echo(verify_text(report))
    if not report.ok:
        if not as_json:
            click.echo(f"error: index {report.index} is damaged: {report.problems[0]}", err=True)
        ctx.exit(1)


def verify_text(report: VerifyReport) -> str:
    """What was checked and what was found."""
    status = "ok" if report.ok else f"DAMAGED ({len(report.problems)} problem(s))"
    lines = [f"{report.index}: {status}", f"checked: {', '.join(report.checks)}"]
    lines.extend(f"problem: {p}" for p in report.problems)
    if report.removed:
        lines.append(f"removed {len(report.removed)} leftover file(s) of an interrupted write")
    return "\n".join(lines)

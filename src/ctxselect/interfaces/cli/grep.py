"""The ``grep`` command: exact text or a regex in an index's documents, like ``grep -n``."""

from __future__ import annotations

import click

from ctxselect import api
from ctxselect.agent import DEFAULT_BUDGET, MIN_BUDGET
from ctxselect.agent.grep import DEFAULT_CONTEXT, MAX_CONTEXT, GrepResult, grep_index
from ctxselect.agent.grep_text import grep_lines
from ctxselect.interfaces.cli.group import (
    check_budget,
    check_filter,
    cli,
    emit_json,
    index_option,
    json_option,
)


@cli.command()
@click.argument("pattern")
@click.option("--fixed", "-F", is_flag=True, help="PATTERN is literal text, not a regex.")
@click.option("--ignore-case", "-i", is_flag=True, help="Match regardless of case.")
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    callback=check_filter,
    help="Search only documents whose id matches a GLOB (gitignore syntax: '*.py' at any "
    "depth, 'docs/' a folder, '/src/*.py' anchored). Repeatable.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    callback=check_filter,
    help="Skip documents whose id matches a GLOB (gitignore syntax). Repeatable.",
)
@click.option(
    "--context",
    "-C",
    type=click.IntRange(0, MAX_CONTEXT),
    default=DEFAULT_CONTEXT,
    show_default=True,
    help=f"Lines before and after each matching line (0 to {MAX_CONTEXT}).",
)
@click.option(
    "--budget",
    type=int,
    default=DEFAULT_BUDGET,
    show_default=True,
    callback=check_budget,
    help=f"Tokens of matching blocks to print (at least {MIN_BUDGET}, as in MCP grep).",
)
@index_option
@json_option
def grep(
    pattern: str,
    fixed: bool,
    ignore_case: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    context: int,
    budget: int,
    index: str | None,
    as_json: bool,
) -> None:
    """Find PATTERN (a Python regex; ^ and $ match at lines) in the indexed documents.

    Searches the documents' text as the index stores it (what get_document serves), never
    the files on disk. Prints a header per document, then `FILE:LINE: text` for matching
    lines and `FILE-LINE- text` for context lines, `--` between blocks, in (document,
    line) order until --budget; the summary (matches left out, why it stopped) goes to
    stderr.
    """
    with api.open_index(index) as idx:
        result = grep_index(
            idx,
            pattern,
            fixed=fixed,
            ignore_case=ignore_case,
            include=include,
            exclude=exclude,
            context=context,
            budget=budget,
        )
    if as_json:
        emit_json(result)
        return
    text = render(result)
    if text:
        click.echo(text, nl=False)
    click.echo(summary(result), err=True)


def render(result: GrepResult) -> str:
    """The blocks as ``grep -n`` prints them, with a header line per document."""
    return grep_lines(result.blocks, with_file=True)


def summary(result: GrepResult) -> str:
    """One line for stderr: what was found, shown and left out, and why it stopped."""
    shown = sum(len(b.matches) for b in result.blocks)
    docs = len({b.doc_id for b in result.blocks})
    facts = [
        f"{result.matches} matching line(s) in {result.documents} document(s) searched",
        f"{shown} shown in {docs} document(s), {result.tokens_used} of {result.budget} tokens",
        f"{result.matches_left_out} left out",
        f"stop: {result.stop}",
    ]
    facts.extend([result.note] if result.note else [])
    return "grep: " + "; ".join(facts)

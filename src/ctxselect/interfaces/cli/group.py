"""The ``ctxselect`` click group and what every command module shares: ``--json``,
``--index``, ``--mode``, the filter flags, JSON output and one-line errors.

Each command body is parse -> one ``api`` call -> render. stdout carries data; stderr
carries everything else. A :class:`CtxselectError` becomes one line on stderr and exit
code 1 (``--debug`` shows the traceback). Command modules import from here and add
their commands to :data:`cli`; ``main.py`` imports them when they are asked for (so none
imports ``main``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ctxselect.config import CONFIG_ENV, CONFIG_FILE, INDEX_ENV
from ctxselect.errors import CtxselectError

F = TypeVar("F", bound=Callable[..., Any])
INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT, as shells report it)."""


def to_jsonable(value: Any) -> Any:
    """Turn API values (dataclasses, tuples, lists of them) into JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def emit_json(value: Any) -> None:
    """Print ``value`` as JSON on stdout."""
    click.echo(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False))


class ErrorHandlingGroup(click.Group):
    """Turns ctxselect errors into one stderr line and exit 1, unless ``--debug``.

    Commands load on demand: when ``command_loader`` is set (``main.py`` sets it), asking
    for a command not yet added imports only the module that defines it, and listing
    the commands (``--help``) imports them all. A cold ``ctxselect mcp`` or ``search``
    then does not import the evaluation, sweep and store commands it never runs.
    """

    command_loader: Callable[[str | None], None] | None = None
    """Imports the module defining the named command (every command module for None)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and self.command_loader is not None:
            self.command_loader(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        if self.command_loader is not None:
            self.command_loader(None)
        return super().list_commands(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        given = list(ctx.args)  # click empties them while it dispatches
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            # a file named "-notes.md" reads as the options -n -o ...: say how to name it
            named = [a for a in given if a.startswith(exc.option_name)]
            files = [a for a in named if os.path.lexists(a)]
            if not files:
                raise
            hint = (
                f" ({files[0]} is read as options, and a file of that name exists: to pass "
                f"it as a path, put -- before it: ctxselect {ctx.invoked_subcommand} "
                f"[OPTIONS] -- {files[0]})"
            )
            raise click.NoSuchOption(
                exc.option_name, exc.message + hint, exc.possibilities, exc.ctx
            ) from None
        except (CtxselectError, OSError) as exc:
            # OSError: a file we were asked to write or read failed; its message names it.
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            ctx.exit(1)


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output on stdout)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")(func)


def index_option(func: F) -> F:
    """Add ``--index DIR`` with the ``CTXSELECT_INDEX`` environment variable."""
    return click.option(
        "--index",
        "index",
        envvar=INDEX_ENV,
        metavar="DIR",
        default=None,
        help=f"Index folder (env {INDEX_ENV}; default ./.ctxselect).",
    )(func)


def choices(kind: str) -> str:
    """Comma-separated valid names of a registry, for help texts."""
    from ctxselect.api.read import names

    return ", ".join(names(kind))


def registered(kind: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback refusing a name the ``kind`` registry lacks as a usage error.

    A bad flag value exits 2 with the usage line, like a bad number; the message is the
    registry's own (it lists the valid names).
    """

    def check(_ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        from ctxselect.api.read import names
        from ctxselect.errors import UnknownNameError

        valid = names(kind)
        if value is not None and value not in valid:
            raise click.BadParameter(str(UnknownNameError(kind, value, valid)), param=param)
        return value

    return check


def mode_option(func: F) -> F:
    """Add ``--mode`` (retrieval mode; default: the index's)."""
    return click.option(
        "--mode",
        default=None,
        callback=registered("mode"),
        help=f"Retrieval mode: {choices('mode')} (default: the index's, bm25 unless `tune` "
        "made it hybrid; dense and hybrid need an index built with --embedder).",
    )(func)


def check_filter(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> Any:
    """Refuse an invalid glob or a --where without '=' as a usage error (one line)."""
    from ctxselect.api.filters import make_filter

    try:
        make_filter(**{str(param.name): value})
    except CtxselectError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


def filter_options(func: F) -> F:
    """Add ``--include GLOB``, ``--exclude GLOB`` and ``--where KEY=VALUE`` (repeatable):
    filters applied inside retrieval, as grep's globs and the MCP tools' arguments."""
    options = [
        click.option(
            "--where",
            multiple=True,
            metavar="KEY=VALUE",
            callback=check_filter,
            help="Rank only documents whose metadata KEY equals VALUE: kind, language, "
            "path, title or a user field (BEIR metadata, Markdown front matter). "
            "Repeatable: the same KEY twice means either value, different KEYs all must hold.",
        ),
        click.option(
            "--exclude",
            multiple=True,
            metavar="GLOB",
            callback=check_filter,
            help="Leave out documents whose id matches a GLOB (gitignore syntax). Repeatable.",
        ),
        click.option(
            "--include",
            multiple=True,
            metavar="GLOB",
            callback=check_filter,
            help="Rank only documents whose id matches a GLOB (gitignore syntax: '*.py' at "
            "any depth, 'docs/' a folder, '/src/*.py' anchored). Repeatable.",
        ),
    ]
    for option in options:
        func = option(func)
    return func


def check_budget(_ctx: click.Context, _param: click.Parameter, value: int) -> int:
    """Refuse a budget below the minimum as a usage error, with the MCP server's message."""
    from ctxselect.agent import check_budget as check  # the one bound both front ends use

    try:
        return check(value, None)
    except CtxselectError as exc:
        raise click.BadParameter(str(exc)) from None


def progress_enabled() -> bool:
    """Progress bars only when a person watches stderr."""
    return sys.stderr.isatty()


@click.group(cls=ErrorHandlingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    envvar=CONFIG_ENV,
    default=None,
    metavar="FILE",
    help=f"Take defaults from FILE (a {CONFIG_FILE}, or a pyproject.toml's [tool.ctxselect]) "
    f"instead of the nearest one from here up to the repository root (env {CONFIG_ENV}).",
)
@click.option("--no-config", is_flag=True, help="Read no project config file.")
@click.version_option(package_name="ctxselect")
@click.pass_context
def cli(ctx: click.Context, debug: bool, config_file: str | None, no_config: bool) -> None:
    """Decide what goes into an LLM's context window: chunk, rank, select under a budget.

    Defaults come from the nearest ctxselect.toml or [tool.ctxselect] in pyproject.toml;
    flags, then environment variables, win over it (`ctxselect info` says which applied).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if not no_config:
        from ctxselect.interfaces.cli.project import apply_project_config

        ctx.obj["project"] = apply_project_config(ctx, config_file)


__all__ = [
    "ErrorHandlingGroup",
    "F",
    "check_budget",
    "choices",
    "cli",
    "emit_json",
    "filter_options",
    "index_option",
    "json_option",
    "mode_option",
    "progress_enabled",
    "registered",
    "to_jsonable",
]

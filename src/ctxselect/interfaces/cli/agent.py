"""Commands for agents: ``mcp`` (the MCP server) and ``examples`` (few-shot selection)."""

from __future__ import annotations

import json

import click

from ctxselect import agent
from ctxselect._require import require
from ctxselect.agent import examples
from ctxselect.agent.memory import IDLE_SECONDS
from ctxselect.config import DEFAULT_TOKENIZER, PORT
from ctxselect.interfaces.cli import render
from ctxselect.interfaces.cli.group import (
    choices,
    cli,
    emit_json,
    index_option,
    json_option,
)
from ctxselect.interfaces.cli.numbers import number
from ctxselect.interfaces.cli.options import name_option


@cli.command("mcp")
@index_option
@click.option(
    "--library",
    "--examples",  # the 0.1 spelling, still accepted
    "library_path",
    type=click.Path(),
    default=None,
    metavar="FILE.jsonl",
    help='Example library ({"input", "output"} per line, as `examples --library`): adds the '
    "examples tool. --examples is its 0.1 name.",
)
@click.option("--allow-write", is_flag=True, help="Add the add and index tools.")
@click.option(
    "--max-result-tokens",
    type=int,
    default=agent.DEFAULT_MAX_RESULT_TOKENS,
    show_default=True,
    envvar=agent.MAX_TOKENS_ENV,
    help=f"No tool result exceeds this many tokens (env {agent.MAX_TOKENS_ENV}).",
)
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", type=number(PORT), default=8000, show_default=True, help="Port for --http.")
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON and exit.")
def mcp_cmd(
    index: str | None,
    library_path: str | None,
    allow_write: bool,
    max_result_tokens: int,
    http: bool,
    port: int,
    as_json: bool,
) -> None:
    """Serve the index to MCP clients: budgeted context that never repeats itself.

    Runs over stdio (what Claude Code and most clients start) unless --http. Read-only
    unless --allow-write. The index and example library are loaded before serving, so a
    missing or damaged one is an error here, not in the client.
    """
    require("mcp", extra="mcp", feature="`ctxselect mcp`")
    from ctxselect.interfaces import mcp_server  # the MCP SDK loads only here

    agent.check_max_result_tokens(max_result_tokens)
    opened = agent.load_index(index)
    library = None
    if library_path is not None:
        tokenizer = opened.chunk_spec.tokenizer
        library = examples.ExampleLibrary.load(library_path, tokenizer=tokenizer)
    server = mcp_server.build_server(
        opened,
        library=library,
        allow_write=allow_write,
        max_result_tokens=max_result_tokens,
        # over HTTP a client that went away never says so; over stdio the process ends
        idle_seconds=IDLE_SECONDS if http else None,
    )
    if as_json:
        click.echo(json.dumps(mcp_server.tool_list(server), indent=2, ensure_ascii=False))
        return
    transport = f"http://127.0.0.1:{port}/mcp" if http else "stdio"
    banner = render.mcp_banner(
        opened.info(), mcp_server.tool_names(server), transport, max_result_tokens
    )
    click.echo(banner, err=True)
    mcp_server.serve(server, http=http, port=port)


@cli.command("examples")
@click.option(
    "--library", required=True, type=click.Path(), metavar="FILE.jsonl", help="Example library."
)
@click.option("--input", "input_text", required=True, help="The new input to find examples for.")
@click.option(
    "--budget",
    type=int,
    default=examples.DEFAULT_EXAMPLES_BUDGET,
    show_default=True,
    help="Tokens of the rendered examples.",
)
@click.option(
    "-k",
    "--k",
    "k",
    type=int,
    default=examples.DEFAULT_EXAMPLES_K,
    show_default=True,
    help="Examples to choose at most.",
)
@click.option(
    "--mmr-lambda",
    type=float,
    default=examples.DEFAULT_MMR_LAMBDA,
    show_default=True,
    help="1 = relevance only, 0 = diversity only.",
)
@name_option("tokenizer", DEFAULT_TOKENIZER, f"Counts the budget: {choices('tokenizer')}.")
@json_option
def examples_cmd(
    library: str,
    input_text: str,
    budget: int,
    k: int,
    mmr_lambda: float,
    tokenizer: str,
    as_json: bool,
) -> None:
    """Choose few-shot examples for an input: relevant, diverse, within a token budget.

    Prints the examples as a prompt holds them (Input: ... / Output: ...), most relevant
    last; a summary goes to stderr.
    """
    selection = examples.select_examples(
        library, input_text, budget, k, mmr_lambda=mmr_lambda, tokenizer=tokenizer
    )
    if as_json:
        emit_json(selection)
        return
    click.echo(examples.render(selection), nl=False)
    click.echo(render.examples_summary(selection), err=True)

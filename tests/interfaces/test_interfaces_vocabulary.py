"""One vocabulary: the real CLI commands, MCP tools and API names agree with the table.

Each surface is derived from the code (the click group, the MCP server's tool list with
every optional tool on, ``ctxselect.__all__`` and ``Index``'s methods), never typed here.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import click
import pytest

import ctxselect
from _support.sessions_corpus import build
from ctxselect import api
from ctxselect.agent import Sessions
from ctxselect.agent.examples import ExampleLibrary
from ctxselect.interfaces import vocabulary
from ctxselect.interfaces.cli import docgen  # noqa: F401  (registers every command)
from ctxselect.interfaces.cli.main import cli
from ctxselect.interfaces.mcp_server import build_server, tool_list
from ctxselect.interfaces.vocabulary import ARGUMENT_EXCEPTIONS, TERMS, Term

FORMATS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


@pytest.fixture(scope="module")
def mcp_tools(tmp_path_factory) -> dict[str, list[str]]:
    """Every tool of a server with all optional tools on -> its argument names."""
    tmp = tmp_path_factory.mktemp("vocabulary")
    _, folder = build(tmp)
    library = tmp / "examples.jsonl"
    library.write_text(json.dumps({"input": "a cache", "output": "b"}) + "\n", encoding="utf-8")
    with api.open_index(folder) as index:
        server = build_server(index, library=ExampleLibrary.load(library), allow_write=True)
        tools = tool_list(server)
    return {t["name"]: list(t["inputSchema"].get("properties", {})) for t in tools}


def api_names() -> set[str]:
    """The public functions of ``ctxselect`` and the public methods of ``Index``."""
    functions = {n for n in ctxselect.__all__ if inspect.isfunction(getattr(ctxselect, n))}
    methods = {
        f"Index.{n}" for n, _ in inspect.getmembers(api.Index, inspect.isfunction)
        if not n.startswith("_")
    }  # fmt: skip
    return functions | methods


def resolve(name: str) -> object:
    """The object a table name stands for: ``add_paths``, ``Index.select``, ``api.x.f``."""
    head, _, rest = name.partition(".")
    if head == "Index":
        return getattr(api.Index, rest)
    if not rest:
        return getattr(ctxselect, head)
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(f"ctxselect.{module}"), attr)


def keywords(term: Term) -> set[str]:
    """Keyword arguments of the term's Python name and of its ``also`` callables."""
    names: set[str] = set()
    for name in (term.python, *term.also):
        assert name is not None
        names |= set(inspect.signature(resolve(name)).parameters) - {"self"}  # type: ignore[arg-type]
    return names


def flag_name(param: click.Parameter) -> str:
    """``--foo-bar`` -> ``foo_bar`` (the first long flag); an argument (QUERY) -> its name."""
    if isinstance(param, click.Argument):
        assert param.name is not None
        return param.name
    flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    return flag.lstrip("-").replace("-", "_")


def exception(surface: str, name: str, argument: str) -> bool:
    return (f"{surface}:{name}", argument) in ARGUMENT_EXCEPTIONS or (
        f"{surface}:*",
        argument,
    ) in ARGUMENT_EXCEPTIONS


def test_every_command_tool_and_function_is_in_the_table_once(mcp_tools):
    for column in ("python", "cli", "mcp"):
        names = [getattr(t, column) for t in TERMS if getattr(t, column)]
        assert len(names) == len(set(names)), f"a {column} name appears twice"
    assert {t.cli for t in TERMS if t.cli} == set(cli.commands)
    assert {t.mcp for t in TERMS if t.mcp} == set(mcp_tools)
    table = {t.python for t in TERMS if t.python}
    public = {n for n in table if n.startswith("Index.") or "." not in n}
    assert public == api_names()
    for name in table | {a for t in TERMS for a in t.also}:
        assert callable(resolve(name)), name


def test_cli_and_mcp_share_names_and_follow_the_rule():
    for term in TERMS:
        if term.cli and term.mcp:
            assert term.cli == term.mcp, term
        verb = term.mcp or term.cli
        if verb is None or term.python is None:
            continue
        if term.python.startswith("Index."):  # Index methods are the bare verb
            assert term.python == f"Index.{verb}", term
        elif "." not in term.python:  # ctxselect's functions add their object
            assert term.python == verb or term.python.startswith(f"{verb}_"), term


def test_sessions_methods_carry_the_api_names(mcp_tools):
    """The MCP server's tools call Sessions methods named as the API's functions."""
    for term in TERMS:
        if term.mcp in mcp_tools and term.python and "." not in term.python.removeprefix("Index."):
            assert callable(getattr(Sessions, term.python.removeprefix("Index."), None)), term
    for old in ("select_context", "add_documents", "reindex"):
        assert not hasattr(Sessions, old)


def test_mcp_arguments_are_the_api_keywords(mcp_tools):
    wrong = [
        (term.mcp, arg)
        for term in TERMS
        if term.mcp and term.python
        for arg in mcp_tools[term.mcp]
        if arg not in keywords(term) and not exception("mcp", term.mcp, arg)
    ]
    assert wrong == []


def test_cli_flags_are_the_api_keywords():
    wrong = [
        (term.cli, flag_name(param))
        for term in TERMS
        if term.cli and term.python
        for param in cli.commands[term.cli].params
        if flag_name(param) not in keywords(term)
        and not exception("cli", term.cli, flag_name(param))
    ]
    assert wrong == []


def test_every_argument_exception_is_needed(mcp_tools):
    """An exception that no longer excuses anything is stale: remove it."""
    for (where, argument), why in ARGUMENT_EXCEPTIONS.items():
        surface, _, name = where.partition(":")
        assert why
        terms = [t for t in TERMS if getattr(t, surface) and name in ("*", getattr(t, surface))]
        used = []
        for term in terms:
            if surface == "mcp":
                given = mcp_tools[term.mcp]  # type: ignore[index]
            else:
                given = [flag_name(p) for p in cli.commands[term.cli].params]  # type: ignore[index]
            used.append(argument in given and argument not in keywords(term))
        assert any(used), (where, argument)


def test_docs_show_the_table():
    start, end = vocabulary.MARKERS
    text = FORMATS.read_text(encoding="utf-8")
    assert f"{start}\n{vocabulary.markdown()}\n{end}" in text

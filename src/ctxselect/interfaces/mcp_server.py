"""The MCP server: budgeted, session-aware context from one index, as typed tools.

:func:`build_server` assembles an ``MCPServer`` (a
:class:`~ctxselect.interfaces.mcp_wire.StrictServer`, which refuses unknown tools and
arguments) from the tools of :mod:`ctxselect.interfaces.mcp_tools`, thin adapters over
:class:`ctxselect.agent.Sessions` and :class:`ctxselect.agent.examples.ExampleLibrary`.
Only the ``mcp_*`` modules import the MCP SDK (the ``ctxselect[mcp]`` extra). Tools are
named as the CLI's commands (:mod:`ctxselect.interfaces.vocabulary`); a 0.1 name still
answers, logging once that it is deprecated. ``ctxselect mcp`` runs the server over stdio
(nothing but protocol messages on stdout; logs on stderr) or streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from ctxselect import agent, api
from ctxselect.agent.examples import ExampleLibrary
from ctxselect.interfaces import mcp_tools
from ctxselect.interfaces.cli.render import counted
from ctxselect.interfaces.mcp_wire import (
    WRITE_TOOLS,
    StrictServer,
    output_model,
    session_key,
    to_text,
    warn_deprecated,
)

HOST = "127.0.0.1"
DEFAULT_PORT = 8000


@asynccontextmanager
async def _connection(_: MCPServer) -> AsyncIterator[dict[str, str]]:
    """Entered once per served connection (stdio: the process); names its session."""
    yield {"session": uuid.uuid4().hex}


def build_server(
    index: api.Index,
    *,
    library: ExampleLibrary | None = None,
    allow_write: bool = False,
    max_result_tokens: int = agent.DEFAULT_MAX_RESULT_TOKENS,
    idle_seconds: float | None = None,
) -> StrictServer:
    """Build the MCP server over an opened index.

    Args:
        index: The index to serve (see :func:`open_server` to open one by path).
        library: Few-shot examples for ``examples`` (the tool exists only then).
        allow_write: Add ``add`` and ``index``; without it all tools read.
        max_result_tokens: No tool result exceeds this many tokens (index tokenizer).
        idle_seconds: Forget a session after this long without a call (None: never, as
            over stdio, where the one session lasts as long as the process).
    """
    service = agent.Sessions(
        index, max_result_tokens=max_result_tokens, serialize=to_text, idle_seconds=idle_seconds
    )
    server = StrictServer(
        "ctxselect",
        instructions=_instructions(service, library, allow_write),
        lifespan=_connection,
        log_level="WARNING",
    )
    mcp_tools.add_read_tools(server, service)
    mcp_tools.add_grep_tool(server, service)
    if library is not None:
        mcp_tools.add_examples_tool(server, service, library)
    if allow_write:
        mcp_tools.add_write_tools(server, service)
    return server


def _instructions(service: agent.Sessions, library: object, allow_write: bool) -> str:
    info = service.info()
    tokenizer = service.index.chunk_spec.tokenizer
    lines = [
        f"Budgeted, session-aware context from the ctxselect index at {info.index} "
        f"({counted(info.documents, 'document')}, {counted(info.chunks, 'chunk')}; tokens "
        f"counted in {tokenizer}).",
        "Start with select(query, budget): the best chunks that fit the budget, "
        "stopping early where the ranking stops being relevant (stop=none fills it). "
        "Chunks this session already received come back as short references "
        "('already provided: ...') instead of text, unless refresh=true.",
        "search ranks chunks; get_chunk and get_document read by id (ids come from results); "
        "explain shows why a chunk scored; info describes the index; grep(pattern) finds "
        "exact text or a regex (identifiers, error messages) with line numbers and context.",
        f"No result exceeds {service.max_result_tokens} tokens.",
    ]
    if library is not None:
        lines.append("examples(input, budget, k) picks few-shot examples.")
    if allow_write:
        lines.append("add(paths) and index() update the index from its roots.")
    return "\n".join(lines)


def tool_names(server: MCPServer) -> list[str]:
    """Names of the server's tools, in registration order."""
    return [tool.name for tool in anyio.run(server.list_tools)]


def tool_list(server: MCPServer) -> list[dict[str, Any]]:
    """Every tool as ``tools/list`` describes it: name, description, schemas, hints."""
    tools = anyio.run(server.list_tools)
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def serve(server: StrictServer, *, http: bool = False, port: int = DEFAULT_PORT) -> None:
    """Serve until the client leaves: stdio, or streamable HTTP on 127.0.0.1:``port``/mcp.

    Over HTTP a session is the client's ``Mcp-Session-Id``, which only the ``initialize``
    handshake gives, so the server offers only handshake-era protocol versions there
    (:meth:`StrictServer.offer_sessions`). Over stdio the process is the session.
    """
    if http:
        server.offer_sessions()
        server.run("streamable-http", host=HOST, port=port)
    else:
        server.run("stdio")


__all__ = [
    "DEFAULT_PORT",
    "HOST",
    "WRITE_TOOLS",
    "StrictServer",
    "build_server",
    "output_model",
    "serve",
    "session_key",
    "to_text",
    "tool_list",
    "tool_names",
    "warn_deprecated",
]

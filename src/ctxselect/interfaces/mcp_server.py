"""The MCP server: budgeted, session-aware context from one index, as typed tools.

The only module that imports the MCP SDK (the ``ctxselect[mcp]`` extra).
:func:`build_server` returns an ``MCPServer`` (a :class:`StrictServer`, which refuses
unknown tools and arguments) whose tools are thin adapters over
:class:`ctxselect.agent.Sessions` and :class:`ctxselect.agent.examples.ExampleLibrary`: each
result is the facade's own value as structured output (``select``: the rendered
context as text plus small structured metadata), and each expected failure is a
``ToolError`` with the facade's message: the CLI's where both front ends meet the same
check (budget, query, mode names), worded in tool and argument names where the CLI's
would name a command. Tools are named as the CLI's commands
(:mod:`ctxselect.interfaces.vocabulary`); a 0.1 name still answers, logging once that it is
deprecated. ``ctxselect mcp`` runs the server over
stdio (nothing but protocol messages on stdout; logs on stderr) or streamable HTTP on
127.0.0.1.

No ``from __future__ import annotations`` here, on purpose: the tools' annotations are
evaluated where the tools are defined, so each schema carries this server's own bounds
(the budget's maximum is the server's result cap).
"""

import dataclasses
import functools
import inspect
import logging
import typing
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

import anyio
import pydantic_core
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, create_model

from ctxselect import agent, api
from ctxselect.agent import examples as fewshot
from ctxselect.agent import grep as exact
from ctxselect.agent.examples import ExampleLibrary, ExampleSelection
from ctxselect.agent.globs import MAX_GLOBS
from ctxselect.errors import CtxselectError
from ctxselect.interfaces import vocabulary
from ctxselect.types import (
    ContextResult,
    Explanation,
    IndexInfo,
    Passage,
    SearchResult,
    WriteResult,
)

V = TypeVar("V")
HOST = "127.0.0.1"
DEFAULT_PORT = 8000
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=False, open_world_hint=False)
WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE_TOOLS = ("add", "index")
log = logging.getLogger(__name__)
_warned: set[str] = set()


class StrictServer(MCPServer):
    """An ``MCPServer`` that refuses calls the SDK would run anyway.

    The SDK ignores argument names its tool does not declare (``{"bugdet": 500}`` would
    run with the default budget) and answers a tool it lacks with a bare "Unknown tool".
    Here both are ``ToolError``s naming what is valid, and a write tool of a read-only
    server says which flag enables it. A deprecated name
    (:data:`~ctxselect.interfaces.vocabulary.DEPRECATED_TOOLS`) runs today's tool.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, tuple[str, ...]] = {}
        """Each tool's argument names, filled by :func:`_register`."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Refuse an unknown tool or argument, then call the tool as the SDK does."""
        called, name = name, vocabulary.current_tool(name)
        if called != name:
            warn_deprecated(called, name)
        valid = self.arguments.get(name)
        if valid is None:
            message = agent.unknown_tool(name, list(self.arguments), WRITE_TOOLS)
            renamed = f"{called} is now called {name}; " if called != name else ""
            raise ToolError(renamed + message)
        unknown = [key for key in arguments if key not in valid]
        if unknown:
            raise ToolError(
                f"Error executing tool {name}: {agent.unknown_arguments(name, unknown, valid)}"
            )
        return await super().call_tool(name, arguments, context)


def warn_deprecated(old: str, new: str) -> None:
    """Log, once per process, that tool ``old`` is deprecated and ``new`` replaces it."""
    if old in _warned:
        return
    _warned.add(old)
    log.warning(
        "ctxselect mcp: tool %s is deprecated (answered through ctxselect %s): call %s, "
        "same arguments",
        old,
        vocabulary.DEPRECATED_UNTIL,
        new,
    )


def to_text(value: object) -> str:
    """The text a result reaches the client as (result sizes count this).

    A ``select`` result is its text block plus its compact metadata
    (:func:`ctxselect.agent.context_wire`); any other result is the text block the SDK
    sends for a structured result: indented JSON.
    """
    if isinstance(value, ContextResult):
        return agent.context_wire(value)
    return pydantic_core.to_json(value, fallback=str, indent=2).decode()


def context_content(result: ContextResult) -> CallToolResult:
    """A ``select`` result as sent: the rendered context once, small metadata."""
    return CallToolResult(
        content=[TextContent(type="text", text=agent.context_text(result))],
        structured_content=agent.structured(result),
    )


@functools.cache
def output_model(cls: type) -> type[BaseModel]:
    """Return a pydantic model with the fields of the value dataclass ``cls``.

    The SDK derives an output schema from class attributes, which slotted dataclasses do
    not have; this model gives the same schema, and validates instances of ``cls``.
    """
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (hints[f.name], ...)
    config = ConfigDict(from_attributes=True)
    return create_model(cls.__name__, __config__=config, __doc__=cls.__doc__, **fields)


def _register(
    server: StrictServer, fn: Callable[..., Any], title: str, hints: ToolAnnotations
) -> None:
    """Add ``fn`` as a tool whose output schema is its dataclass return type's.

    A tool annotated ``Annotated[CallToolResult, Model]`` builds its own content and
    keeps that annotation: ``Model`` is then its output schema.
    """
    returns = fn.__annotations__["return"]
    if isinstance(returns, type) and dataclasses.is_dataclass(returns):
        fn.__annotations__["return"] = output_model(returns)
    description = inspect.cleandoc(fn.__doc__ or "")
    server.add_tool(
        fn, title=title, description=description, annotations=hints, structured_output=True
    )
    params = inspect.signature(fn).parameters.values()
    server.arguments[fn.__name__] = tuple(p.name for p in params if p.annotation is not Context)


def _call(action: Callable[[], V]) -> V:
    """Run a facade call; an expected failure becomes a ToolError with the CLI's message."""
    try:
        return action()
    except (CtxselectError, OSError) as exc:
        raise ToolError(str(exc)) from exc


@asynccontextmanager
async def _connection(_: MCPServer) -> AsyncIterator[dict[str, str]]:
    """Entered once per served connection (stdio: the process); names its session."""
    yield {"session": uuid.uuid4().hex}


def session_key(ctx: Context) -> str | None:
    """The session a tool call belongs to.

    Over HTTP: the ``Mcp-Session-Id`` header (None for a client without one: nothing is
    remembered for it). Over stdio and in-process: the connection.
    """
    request = ctx.request_context.request
    if request is not None:
        sid = request.headers.get("mcp-session-id")
        return f"http:{sid}" if sid else None
    return str(ctx.request_context.lifespan_context["session"])


def _text(description: str, limit: int) -> Any:
    return Field(description=description, json_schema_extra={"minLength": 1, "maxLength": limit})


def _int(description: str, low: int, high: int | None = None) -> Any:
    bounds: dict[str, Any] = {"minimum": low} | ({"maximum": high} if high is not None else {})
    return Field(description=description, json_schema_extra=bounds)


def build_server(
    index: api.Index,
    *,
    library: ExampleLibrary | None = None,
    allow_write: bool = False,
    max_result_tokens: int = agent.DEFAULT_MAX_RESULT_TOKENS,
) -> StrictServer:
    """Build the MCP server over an opened index.

    Args:
        index: The index to serve (see :func:`open_server` to open one by path).
        library: Few-shot examples for ``examples`` (the tool exists only then).
        allow_write: Add ``add`` and ``index``; without it all tools read.
        max_result_tokens: No tool result exceeds this many tokens (index tokenizer).
    """
    service = agent.Sessions(index, max_result_tokens=max_result_tokens, serialize=to_text)
    server = StrictServer(
        "ctxselect",
        instructions=_instructions(service, library, allow_write),
        lifespan=_connection,
        log_level="WARNING",
    )
    _add_read_tools(server, service)
    _add_grep_tool(server, service)
    if library is not None:
        _add_examples_tool(server, service, library)
    if allow_write:
        _add_write_tools(server, service)
    return server


def _instructions(service: agent.Sessions, library: object, allow_write: bool) -> str:
    info = service.info()
    tokenizer = service.index.chunk_spec.tokenizer
    lines = [
        f"Budgeted, session-aware context from the ctxselect index at {info.index} "
        f"({info.documents} documents, {info.chunks} chunks; tokens counted in {tokenizer}).",
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


def _add_read_tools(server: StrictServer, service: agent.Sessions) -> None:
    cap = service.max_result_tokens
    modes = ", ".join(api.names("mode"))
    query_t = Annotated[str, _text("A question or keywords.", agent.MAX_QUERY_CHARS)]
    mode_t = Annotated[
        str | None, Field(description=f"Retrieval mode: {modes}; default: the index's.")
    ]
    chunk_t = Annotated[str, _text("A chunk id (DOC_ID#N) from a result.", agent.MAX_ID_CHARS)]

    def select(
        query: query_t,
        ctx: Context,
        budget: Annotated[
            int, _int("Tokens of context to return, framing included.", agent.MIN_BUDGET, cap)
        ] = agent.DEFAULT_BUDGET,
        mode: mode_t = None,
        detail: Annotated[
            str,
            Field(
                description="snippets: the selected chunks (adjacent ones merged); full: each "
                "widened to its enclosing section when that fits; ids: ids, spans and costs only.",
                json_schema_extra={"enum": list(agent.DETAILS)},
            ),
        ] = "snippets",
        refresh: Annotated[
            bool, Field(description="Send chunks this session already received again.")
        ] = False,
        mmr: Annotated[
            float | None,
            Field(
                description="Diversity: reorder the ranked chunks by maximal marginal relevance "
                "with this lambda from 0 to 1 (1: relevance only; 0.5-0.7 drops near-duplicates). "
                "Needs an index with dense vectors; default: off.",
                json_schema_extra={"minimum": 0, "maximum": 1},
            ),
        ] = None,
        promote: Annotated[
            bool,
            Field(
                description="Send a whole section instead of its selected chunks when at least "
                "two, and half, of its chunks were selected and it fits the budget."
            ),
        ] = False,
        stop: Annotated[
            str | float,
            Field(
                description="Where to stop before the budget is full: auto (the threshold "
                "tuning chose, or the largest score gap on an uncalibrated index), none (fill "
                "the budget), or a P(relevant) threshold from 0 to 1."
            ),
        ] = api.DEFAULT_STOP,
    ) -> Annotated[CallToolResult, output_model(agent.ContextMeta)]:
        """Return the best context for a query that fits a token budget.

        The text is the context as `ctxselect select` prints it (one fenced block per
        piece, headed by its source FILE:start-end), then a line per chunk this session
        already received ("already provided: chunk X from FILE lines a-b"; their tokens go
        to new material), then a summary line. The structured result gives the ids, lines
        and costs: tokens_used, tokens_saved, result_tokens, the session's cumulative
        tokens, the ranked chunks not sent, why it stopped. mmr trades relevance for
        diversity; promote sends whole sections.
        """
        key = session_key(ctx)
        return context_content(
            _call(
                lambda: service.select(
                    key,
                    query,
                    budget,
                    mode=mode,
                    detail=detail,
                    refresh=refresh,
                    mmr=mmr,
                    promote=promote,
                    stop=stop,
                )
            )
        )

    def search(
        query: query_t,
        ctx: Context,
        k: Annotated[int, _int("How many chunks to rank.", 1, agent.MAX_K)] = (
            agent.DEFAULT_SEARCH_K
        ),
        mode: mode_t = None,
    ) -> SearchResult:
        """Rank chunks for a query and return the k best with their text.

        Hits this session already received come back as references instead.
        """
        key = session_key(ctx)
        return _call(lambda: service.search(key, query, k, mode))

    def get_chunk(chunk_id: chunk_t, ctx: Context) -> Passage:
        """Return one chunk's text, with its document, span and line numbers."""
        key = session_key(ctx)
        return _call(lambda: service.get_chunk(key, chunk_id))

    def get_document(
        doc_id: Annotated[str, _text("A document id (a path relative to the indexed root).", 1000)],
        ctx: Context,
        start: Annotated[int, _int("First character (0-based).", 0)] = 0,
        end: Annotated[
            int | None, Field(description="One past the last character; default: the end.")
        ] = None,
    ) -> Passage:
        key = session_key(ctx)
        return _call(lambda: service.get_document(key, doc_id, start, end))

    def explain(
        query: query_t, chunk_id: chunk_t, ctx: Context, mode: mode_t = None
    ) -> Explanation:
        """Take a chunk's score for a query apart, term by term (tf, df, idf, contribution)."""
        key = session_key(ctx)
        return _call(lambda: service.account(key, service.explain(query, chunk_id, mode)))

    def info(ctx: Context) -> IndexInfo:
        """Describe the index: documents, chunks, tokens, settings, retrieval modes."""
        key = session_key(ctx)
        return _call(lambda: service.account(key, service.info()))

    get_document.__doc__ = (
        f"Return text[start:end] of an indexed document: at most {agent.MAX_SPAN_CHARS:,} "
        f"characters and within the result cap; next_start says where to continue."
    )
    tools: list[tuple[Callable[..., Any], str]] = [
        (select, "Select context under a token budget"),
        (search, "Search chunks"),
        (get_chunk, "Read a chunk"),
        (get_document, "Read a document span"),
        (explain, "Explain a score"),
        (info, "Describe the index"),
    ]
    for fn, title in tools:
        _register(server, fn, title, READ_ONLY)


def _add_grep_tool(server: StrictServer, service: agent.Sessions) -> None:
    globs_t = Annotated[
        tuple[str, ...],
        Field(
            description="Gitignore globs matched against doc ids: '*.py' at any depth, "
            "'docs/' a folder, '/src/**/test_*.py' anchored, '!' takes one back.",
            json_schema_extra={"maxItems": MAX_GLOBS},
        ),
    ]

    def grep(
        pattern: Annotated[
            str,
            _text(
                "A regular expression (Python syntax; ^ and $ match at each line), or "
                "literal text with fixed.",
                agent.MAX_QUERY_CHARS,
            ),
        ],
        ctx: Context,
        fixed: Annotated[bool, Field(description="Match pattern as literal text.")] = False,
        ignore_case: Annotated[bool, Field(description="Match regardless of case.")] = False,
        include: globs_t = (),
        exclude: globs_t = (),
        context: Annotated[
            int, _int("Lines before and after each matching line.", 0, exact.MAX_CONTEXT)
        ] = exact.DEFAULT_CONTEXT,
        budget: Annotated[
            int,
            _int(
                "Tokens of matching blocks to return.", agent.MIN_BUDGET, service.max_result_tokens
            ),
        ] = agent.DEFAULT_BUDGET,
    ) -> exact.GrepResult:
        """Find exact text or a regex in the indexed documents, with line numbers.

        Searches only documents whose id matches include and no exclude glob. Returns
        blocks of matching lines with context lines, in (doc_id, line) order, until the
        budget; blocks this session already has come back as references. stop and
        matches_left_out say what was left out; read more with get_document.
        """
        key = session_key(ctx)
        options = {"fixed": fixed, "ignore_case": ignore_case, "context": context}
        globs = {"include": include, "exclude": exclude}
        return _call(lambda: service.grep(key, pattern, budget=budget, **options, **globs))

    _register(server, grep, "Find exact matches", READ_ONLY)


def _add_examples_tool(
    server: StrictServer, service: agent.Sessions, library: ExampleLibrary
) -> None:
    cap = service.max_result_tokens

    def examples(
        input: Annotated[
            str, _text("The new input to find examples for.", fewshot.MAX_INPUT_CHARS)
        ],
        ctx: Context,
        budget: Annotated[
            int, _int("Tokens of rendered examples.", fewshot.MIN_EXAMPLES_BUDGET, cap)
        ] = fewshot.DEFAULT_EXAMPLES_BUDGET,
        k: Annotated[int, _int("Examples to choose at most.", 1, fewshot.MAX_EXAMPLES_K)] = (
            fewshot.DEFAULT_EXAMPLES_K
        ),
    ) -> ExampleSelection:
        """Choose few-shot examples for an input: relevant (BM25 over example inputs) and
        mutually diverse (MMR), fitting the budget; most relevant last."""
        key = session_key(ctx)

        def choose() -> ExampleSelection:
            agent.check_budget(budget, cap, fewshot.MIN_EXAMPLES_BUDGET)
            chosen = library.select(input, budget, k)
            return service.account(key, chosen, fewshot.drop_least_relevant)

        return _call(choose)

    _register(server, examples, "Select few-shot examples", READ_ONLY)


def _add_write_tools(server: StrictServer, service: agent.Sessions) -> None:
    def add(
        paths: Annotated[
            list[str],
            Field(
                description="Files or folders relative to the indexed root, like document ids; "
                "no '..', no absolute paths, no symlinks leading outside.",
                json_schema_extra={"minItems": 1, "maxItems": agent.MAX_PATHS},
            ),
        ],
        ctx: Context,
    ) -> WriteResult:
        """Index new or changed files inside the indexed roots, then reload the index."""
        key = session_key(ctx)
        return _call(lambda: service.account(key, service.add_paths(paths)))

    def index(ctx: Context) -> WriteResult:
        """Re-scan the indexed roots, index what changed, and reload the index."""
        key = session_key(ctx)
        return _call(lambda: service.account(key, service.index_paths()))

    _register(server, add, "Index files inside the roots", WRITES)
    _register(server, index, "Re-index the roots", WRITES)


def tool_names(server: MCPServer) -> list[str]:
    """Names of the server's tools, in registration order."""
    return [tool.name for tool in anyio.run(server.list_tools)]


def tool_list(server: MCPServer) -> list[dict[str, Any]]:
    """Every tool as ``tools/list`` describes it: name, description, schemas, hints."""
    tools = anyio.run(server.list_tools)
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def serve(server: MCPServer, *, http: bool = False, port: int = DEFAULT_PORT) -> None:
    """Serve until the client leaves: stdio, or streamable HTTP on 127.0.0.1:``port``/mcp."""
    if http:
        server.run("streamable-http", host=HOST, port=port)
    else:
        server.run("stdio")

"""Plumbing between the MCP SDK and ctxselect's tools: the strict server, result shapes.

:class:`StrictServer` refuses unknown tools and arguments and answers deprecated tool
names (:mod:`ctxselect.interfaces.vocabulary`); :func:`register` adds a tool whose output
schema is its value dataclass's (:func:`output_model`); :func:`call` turns an expected
failure into a ``ToolError`` with the facade's message; :func:`to_text` is what a result
reaches the client as, which result sizes count (``select`` and ``grep``: a text block
and small metadata, :func:`context_content`, :func:`grep_content`). The tools are in
:mod:`ctxselect.interfaces.mcp_tools`, the assembly in :mod:`ctxselect.interfaces.mcp_server`.
"""

import dataclasses
import functools
import inspect
import json
import logging
import typing
from collections.abc import Callable
from types import UnionType
from typing import Any, TypeVar

import pydantic_core
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, DiscoverResult, TextContent, ToolAnnotations
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, create_model

from ctxselect import agent
from ctxselect.agent.grep import GrepResult
from ctxselect.errors import CtxselectError
from ctxselect.interfaces import vocabulary
from ctxselect.tool_results import ContextResult

V = TypeVar("V")
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
    run with the default budget), answers a tool it lacks with a bare "Unknown tool",
    coerces loosely (``"500"`` and ``true`` as numbers, ``"yes"`` as true) and answers
    any other wrong type with a pydantic dump. Here each is one ``ToolError`` naming what
    is valid (:func:`type_error` for types), and a write tool of a read-only
    server says which flag enables it. A deprecated name
    (:data:`~ctxselect.interfaces.vocabulary.DEPRECATED_TOOLS`) runs today's tool.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, tuple[str, ...]] = {}
        """Each tool's argument names, filled by :func:`register`."""
        self.types: dict[str, dict[str, tuple[Any, Any]]] = {}
        """Each tool's arguments: name -> (type, default), filled by :func:`register`."""

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
        missing = [
            key
            for key, (_, default) in self.types[name].items()
            if default is inspect.Parameter.empty and key not in arguments
        ]
        if missing:
            raise ToolError(
                f"Error executing tool {name}: {missing_error(missing, self.types[name])}"
            )
        for key, value in arguments.items():
            hint, default = self.types[name][key]
            wrong = type_error(key, value, hint, default)
            if wrong:
                raise ToolError(f"Error executing tool {name}: {wrong}")
        whole = {key: as_whole(value, self.types[name][key][0]) for key, value in arguments.items()}
        return await super().call_tool(name, whole, context)

    def offer_sessions(self) -> None:
        """List only handshake-era protocol versions in ``server/discover`` (HTTP sessions).

        Session memory needs a session: over HTTP, the ``Mcp-Session-Id`` that the
        ``initialize`` handshake hands out. The 2026-07-28 revision has no handshake and no
        session id, and the SDK's client speaks it whenever ``server/discover`` lists it;
        a discover result with no such version makes that client fall back to
        ``initialize`` (the SDK's documented legacy advertisement). A client pinned to
        2026-07-28 is still answered, without memory (:func:`session_key`).
        """
        lowlevel = self._lowlevel_server
        entry = lowlevel.get_request_handler("server/discover")
        if entry is None:
            raise RuntimeError("the MCP SDK registered no server/discover handler to wrap")
        answer = entry.handler

        async def discover(ctx: Any, params: Any) -> DiscoverResult:
            result = DiscoverResult.model_validate(await answer(ctx, params))
            handshake = list(HANDSHAKE_PROTOCOL_VERSIONS)
            return result.model_copy(update={"supported_versions": handshake})

        lowlevel.add_request_handler("server/discover", entry.params_type, discover)


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

    A ``select`` or ``grep`` result is its text block plus its compact metadata
    (:func:`ctxselect.agent.context_wire`, :func:`ctxselect.agent.grep_wire`); any other
    result is the text block the SDK sends for a structured result: indented JSON.
    """
    if isinstance(value, ContextResult):
        return agent.context_wire(value)
    if isinstance(value, GrepResult):
        return agent.grep_wire(value)
    return pydantic_core.to_json(value, fallback=str, indent=2).decode()


def context_content(result: ContextResult) -> CallToolResult:
    """A ``select`` result as sent: the rendered context once, small metadata."""
    return CallToolResult(
        content=[TextContent(type="text", text=agent.context_text(result))],
        structured_content=agent.structured(result),
    )


def grep_content(result: GrepResult) -> CallToolResult:
    """A ``grep`` result as sent: the blocks with line numbers once, small metadata."""
    return CallToolResult(
        content=[TextContent(type="text", text=agent.grep_text(result))],
        structured_content=agent.grep_structured(result),
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


def register(
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
    params = [p for p in inspect.signature(fn).parameters.values() if p.annotation is not Context]
    server.arguments[fn.__name__] = tuple(p.name for p in params)
    types = typing.get_type_hints(fn)  # without Annotated's descriptions and bounds
    server.types[fn.__name__] = {p.name: (types[p.name], p.default) for p in params}


_KINDS: dict[Any, tuple[str, str]] = {
    int: ("a whole number", "500"),
    float: ("a number", "0.5"),
    bool: ("true or false", "true"),
    str: ("a string", '"text"'),
    type(None): ("null", "null"),
}


def type_error(name: str, value: Any, hint: Any, default: Any = inspect.Parameter.empty) -> str:
    """Why ``value`` (parsed JSON) is not of type ``hint``, as one line; '' when it is.

    Strict, unlike the SDK's lax validation: a string is never a number or a list, a
    boolean never a number, only ``true``/``false`` are booleans. A number with no
    fraction (``500.0``) is a whole number: JSON has one number type. Types this does not
    know are left to the SDK.
    """
    if _matches(value, hint) is not False:
        return ""
    kinds = [_kind(m) for m in _members(hint)]
    what = " or ".join(k[0] for k in kinds)
    example = json.dumps(default) if default not in (inspect.Parameter.empty, None, ()) else ""
    example = example or kinds[0][1]
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{name} must be {what}, got {shown}: pass {name} as {what}, such as {example}"


def missing_error(missing: list[str], types: dict[str, tuple[Any, Any]]) -> str:
    """Which required arguments a call left out, as one line naming each one's type."""
    needs = ", ".join(f"{key} ({_describe(types[key][0])[0]})" for key in missing)
    first = missing[0]
    example = _describe(types[first][0])[1]
    return (
        f"missing required argument{'s' if len(missing) > 1 else ''} {needs}: "
        f'pass {first}, such as {{"{first}": {example}}}'
    )


def _describe(hint: Any) -> tuple[str, str]:
    return _kind(_members(hint)[0])


def _members(hint: Any) -> tuple[Any, ...]:
    """The types a hint allows: a Union's members, else the hint alone."""
    if typing.get_origin(hint) in (typing.Union, UnionType):
        return typing.get_args(hint)
    return (hint,)


def as_whole(value: Any, hint: Any) -> Any:
    """A JSON number with no fraction as an int where ``hint`` takes an int but no float.

    The SDK's validation refuses a float past the size it parses (``1e30``) with a
    pydantic dump; as an int, the tool's own bound check names the limit instead.
    """
    members = _members(hint)
    wants_int = int in members and float not in members
    if wants_int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _kind(hint: Any) -> tuple[str, str]:
    if typing.get_origin(hint) in (tuple, list):
        return "a list of strings", '["docs/"]'
    return _KINDS[hint]


def _matches(value: Any, hint: Any) -> bool | None:
    """Whether ``value`` is a ``hint``; None for a type this does not check."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, UnionType):
        found = [_matches(value, member) for member in typing.get_args(hint)]
        return True if True in found else (None if None in found else False)
    if origin in (tuple, list):
        item = typing.get_args(hint)[0]
        return isinstance(value, list) and all(_matches(v, item) is not False for v in value)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return number and float(value).is_integer()
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str or hint is type(None):
        return isinstance(value, hint)
    return None


def call(action: Callable[[], V]) -> V:
    """Run a facade call; an expected failure becomes a ToolError with the CLI's message."""
    try:
        return action()
    except (CtxselectError, OSError) as exc:
        raise ToolError(str(exc)) from exc


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


def text_field(description: str, limit: int) -> Any:
    return Field(description=description, json_schema_extra={"minLength": 1, "maxLength": limit})


def int_field(description: str, low: int, high: int | None = None) -> Any:
    bounds: dict[str, Any] = {"minimum": low} | ({"maximum": high} if high is not None else {})
    return Field(description=description, json_schema_extra=bounds)


__all__ = [
    "READ_ONLY",
    "WRITES",
    "WRITE_TOOLS",
    "StrictServer",
    "call",
    "context_content",
    "grep_content",
    "int_field",
    "output_model",
    "register",
    "session_key",
    "text_field",
    "to_text",
    "type_error",
    "warn_deprecated",
]

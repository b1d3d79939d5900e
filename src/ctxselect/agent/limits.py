"""Limits of session-aware reads, and the checks that give every front end one message.

The MCP server advertises these bounds in its tool schemas and the checks below enforce
them, so an agent and a person at the CLI read the same error text.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Collection, Sequence

import pydantic_core

from ctxselect.api.read import whole_budget
from ctxselect.api.searching import check_text
from ctxselect.config import DEFAULT_BUDGET as DEFAULT_BUDGET
from ctxselect.config import DEFAULT_K, check_budget_range
from ctxselect.config import MIN_BUDGET as MIN_BUDGET
from ctxselect.errors import ConfigError, UnknownNameError

DEFAULT_SEARCH_K = DEFAULT_K
"""Hits when a caller names no k: CLI ``search`` and MCP ``search``."""
MAX_K = 50
MAX_QUERY_CHARS = 2000
MAX_ID_CHARS = 1000
MAX_SPAN_CHARS = 20_000
MAX_PATHS = 100
DEFAULT_MAX_RESULT_TOKENS = 20_000
"""Claude Code rejects tool results above 25,000 tokens; 20,000 leaves room for framing."""
MIN_RESULT_TOKENS = 1000
MAX_TOKENS_ENV = "CTXSELECT_MCP_MAX_TOKENS"
DETAILS = ("snippets", "full", "ids")
SHOWN_DROPPED = 5
MAX_SESSIONS = 256


def to_json(value: object) -> str:
    """Serialise a result as the MCP SDK's text block does: indented JSON, UTF-8 kept."""
    return json.dumps(dataclasses.asdict(value), indent=2, ensure_ascii=False)  # type: ignore[call-overload]


def compact_json(value: object) -> str:
    """Serialise ``value`` as the MCP transport sends structured content: compact JSON."""
    return pydantic_core.to_json(value, fallback=str).decode()


def check_query(query: str, limit: int = MAX_QUERY_CHARS, *, what: str = "query") -> str:
    """Return ``query`` if it is non-empty and at most ``limit`` characters, else raise.

    ``what`` names the argument in the message (``query``, ``input``).
    """
    check_text(query, what)
    if not query.strip():
        raise ConfigError(f"{what} is empty: pass the text to look for")
    if len(query) > limit:
        raise ConfigError(
            f"{what} is {len(query):,} characters long, above the limit of {limit:,}: "
            f"shorten it or split it into several calls"
        )
    return query


def check_budget(budget: int, maximum: int | None, minimum: int = MIN_BUDGET) -> int:
    """Return ``budget`` if it is a whole number, ``minimum <= budget <= maximum``, else raise.

    Raises:
        ConfigError: Not an int (``"800"``, ``800.0``, None, a bool), or out of range.
    """
    budget = whole_budget(budget)
    if maximum is not None and budget > maximum >= minimum:
        # the server's cap binds first: naming the global maximum would invite a budget
        # that is still refused
        raise ConfigError(
            f"budget {budget} is above the result cap of {maximum} tokens: ask for at most "
            f"{maximum} (the cap is set where the server is started)"
        )
    return check_budget_range(budget, maximum, minimum)  # config: one range


def check_k(k: int, maximum: int = MAX_K) -> int:
    """Return ``k`` if it is between 1 and ``maximum``, else raise ConfigError."""
    if not 1 <= k <= maximum:
        raise ConfigError(f"k must be between 1 and {maximum}, got {k}")
    return k


def check_mmr(mmr: float | None) -> float | None:
    """Return the MMR λ if it is None or a number from 0 to 1, else raise ConfigError."""
    if mmr is None:
        return None
    if isinstance(mmr, bool) or not isinstance(mmr, int | float) or not 0.0 <= mmr <= 1.0:
        raise ConfigError(
            f"mmr must be a number from 0 to 1, got {mmr!r}: 1 ranks by relevance alone, "
            f"lower values trade relevance for diversity (0.5 to 0.7 is usual)"
        )
    return float(mmr)


def check_mode(mode: str, valid: Collection[str]) -> str:
    """Return ``mode`` if it is one of ``valid``, else raise UnknownNameError."""
    if mode not in valid:
        raise UnknownNameError("mode", mode, valid)
    return mode


def check_detail(detail: str) -> str:
    """Return ``detail`` if it is one of :data:`DETAILS`, else raise UnknownNameError."""
    if detail not in DETAILS:
        raise UnknownNameError("detail", detail, DETAILS)
    return detail


def check_id(kind: str, value: str) -> str:
    """Return a chunk or document id if it is a plausible one, else raise ConfigError.

    Ids are looked up in the index, never on the file system, so no id can read outside
    the indexed roots; ids that look like escapes are refused outright all the same.
    """
    if not value or len(value) > MAX_ID_CHARS or "\x00" in value:
        raise ConfigError(
            f"{kind} must be 1 to {MAX_ID_CHARS} characters without NUL, got {len(value)} "
            f"characters: take ids from search or select results"
        )
    parts = re.split(r"[\\/]", value.split("#", 1)[0])
    if value.startswith(("/", "\\")) or ".." in parts or re.match(r"^[A-Za-z]:[\\/]", value):
        raise ConfigError(
            f"{kind} {value!r} is refused: ids are paths relative to the indexed roots, "
            f"without '..' or a leading '/'; take ids from search or select results"
        )
    return value


def check_max_result_tokens(value: int) -> int:
    """Return the result cap if it is at least :data:`MIN_RESULT_TOKENS`, else raise."""
    if value < MIN_RESULT_TOKENS:
        raise ConfigError(
            f"max result tokens must be at least {MIN_RESULT_TOKENS}, got {value}: "
            f"set --max-result-tokens or {MAX_TOKENS_ENV} higher"
        )
    return value


def unknown_tool(name: str, tools: Sequence[str], write_tools: Sequence[str]) -> str:
    """Why tool ``name`` cannot be called: a write tool of a read-only server, or unknown."""
    if name in write_tools:
        return (
            f"{name} is a write tool and this server is read-only: {' and '.join(write_tools)} "
            f"exist when the server is started with `ctxselect mcp --allow-write`; the tools "
            f"here are {', '.join(tools)}"
        )
    return f"unknown tool {name!r}: the tools here are {', '.join(tools)}"


def unknown_arguments(tool: str, unknown: Sequence[str], valid: Sequence[str]) -> str:
    """Name the arguments ``tool`` does not take, a close valid name, and the valid ones."""
    guesses = [difflib.get_close_matches(key, valid, n=1) for key in unknown]
    hints = "".join(f" (did you mean {g[0]!r}?)" for g in guesses if g)
    names = ", ".join(repr(key) for key in unknown)
    plural = "s" if len(unknown) > 1 else ""
    takes = ", ".join(valid) if valid else "no arguments"
    return f"unknown argument{plural} {names}{hints}: {tool} takes {takes}"

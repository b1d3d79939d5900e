"""The agent layer, what the MCP server serves: sessions, their limits and spans, examples.

Session-aware selection never sends a session what it already received.
:class:`Sessions` (``sessions.py``) wraps an opened index and remembers, per session key,
which chunks each session received as text. A later selection returns those chunks as
one-line references ("already provided: chunk X lines a-b in call N") instead of their
text and spends the tokens saved on new material. Every result says what it cost
(``tokens_used``), what the session has received so far (``session_tokens``) and what was
left out, and no result exceeds ``max_result_tokens`` as the caller receives it (for
``select``: its text block plus compact metadata, :func:`context_wire`; for ``grep``
likewise, :func:`grep_wire`).
``examples.py`` picks few-shot examples for an input within a budget. The MCP server is a
thin adapter over this package; it reads through :mod:`ctxselect.api.read` and loads the
write path only for a write tool.
"""

from ctxselect.agent.grep_text import GrepMeta, grep_structured, grep_text, grep_wire
from ctxselect.agent.limits import (
    DEFAULT_BUDGET,
    DEFAULT_MAX_RESULT_TOKENS,
    DEFAULT_SEARCH_K,
    DETAILS,
    MAX_ID_CHARS,
    MAX_K,
    MAX_PATHS,
    MAX_QUERY_CHARS,
    MAX_SPAN_CHARS,
    MAX_TOKENS_ENV,
    MIN_BUDGET,
    MIN_RESULT_TOKENS,
    check_budget,
    check_detail,
    check_id,
    check_k,
    check_max_result_tokens,
    check_mmr,
    check_mode,
    check_query,
    compact_json,
    to_json,
    unknown_arguments,
    unknown_tool,
)
from ctxselect.agent.loading import load_index
from ctxselect.agent.results import (
    ContextMeta,
    context_meta,
    context_text,
    context_wire,
    structured,
)
from ctxselect.agent.roots import outside_files, resolve_inside
from ctxselect.agent.sessions import Sessions
from ctxselect.agent.spans import line_ranges

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_RESULT_TOKENS",
    "DEFAULT_SEARCH_K",
    "DETAILS",
    "MAX_ID_CHARS",
    "MAX_K",
    "MAX_PATHS",
    "MAX_QUERY_CHARS",
    "MAX_SPAN_CHARS",
    "MAX_TOKENS_ENV",
    "MIN_BUDGET",
    "MIN_RESULT_TOKENS",
    "ContextMeta",
    "GrepMeta",
    "Sessions",
    "check_budget",
    "check_detail",
    "check_id",
    "check_k",
    "check_max_result_tokens",
    "check_mmr",
    "check_mode",
    "check_query",
    "compact_json",
    "context_meta",
    "context_text",
    "context_wire",
    "grep_structured",
    "grep_text",
    "grep_wire",
    "line_ranges",
    "load_index",
    "outside_files",
    "resolve_inside",
    "structured",
    "to_json",
    "unknown_arguments",
    "unknown_tool",
]

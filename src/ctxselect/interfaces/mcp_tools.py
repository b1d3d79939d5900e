"""The MCP tools: thin adapters over :class:`ctxselect.agent.Sessions`.

Each tool's result is the facade's own value as structured output (``select`` and
``grep``: the rendered text plus small structured metadata); each expected failure is a
``ToolError`` with the facade's message. Tools are named as the CLI's commands
(:mod:`ctxselect.interfaces.vocabulary`) and their arguments as the API's keywords.

No ``from __future__ import annotations`` here, on purpose: the tools' annotations are
evaluated where the tools are defined, so each schema carries this server's own bounds
(the budget's maximum is the server's result cap).
"""

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from ctxselect import agent, api
from ctxselect.agent import examples as fewshot
from ctxselect.agent import grep as exact
from ctxselect.agent.examples import ExampleLibrary, ExampleSelection
from ctxselect.api.filters import MAX_WHERE
from ctxselect.api.globs import MAX_GLOBS
from ctxselect.interfaces.mcp_wire import (
    READ_ONLY,
    WRITES,
    StrictServer,
    call,
    context_content,
    grep_content,
    int_field,
    output_model,
    register,
    session_key,
    text_field,
)
from ctxselect.tool_results import Passage, SearchResult
from ctxselect.types import Explanation, IndexInfo, WriteResult

_GLOBS = (
    "Gitignore globs matched against doc ids: '*.py' at any depth, 'docs/' a folder, "
    "'/src/**/test_*.py' anchored, '!' takes one back."
)
IncludeT = Annotated[
    tuple[str, ...],
    Field(
        description=f"Rank only documents matching one of these. {_GLOBS}",
        json_schema_extra={"maxItems": MAX_GLOBS},
    ),
]
ExcludeT = Annotated[
    tuple[str, ...],
    Field(
        description=f"Never rank documents matching one of these. {_GLOBS}",
        json_schema_extra={"maxItems": MAX_GLOBS},
    ),
]
WhereT = Annotated[
    tuple[str, ...],
    Field(
        description="key=value conditions over stored metadata: kind (markdown, code, pdf...), "
        "language (python...), path, title, or a user field (BEIR metadata, front matter). "
        "The same key twice means either value; different keys must all hold.",
        json_schema_extra={"maxItems": MAX_WHERE},
    ),
]


QueryT = Annotated[str, text_field("A question or keywords.", agent.MAX_QUERY_CHARS)]
ChunkIdT = Annotated[str, text_field("A chunk id (DOC_ID#N) from a result.", agent.MAX_ID_CHARS)]
DetailT = Annotated[
    str,
    Field(
        description="snippets: the selected chunks (adjacent ones merged); full: each "
        "widened to its enclosing section when that fits; ids: ids, spans and costs only.",
        json_schema_extra={"enum": list(agent.DETAILS)},
    ),
]
RefreshT = Annotated[bool, Field(description="Send chunks this session already received again.")]
MmrT = Annotated[
    float | None,
    Field(
        description="Diversity: reorder the ranked chunks by maximal marginal relevance "
        "with this lambda from 0 to 1 (1: relevance only; 0.5-0.7 drops near-duplicates). "
        "Needs an index with dense vectors; default: off.",
        json_schema_extra={"minimum": 0, "maximum": 1},
    ),
]
PromoteT = Annotated[
    bool,
    Field(
        description="Send a whole section instead of its selected chunks when at least "
        "two, and half, of its chunks were selected and it fits the budget."
    ),
]
StopT = Annotated[
    str | float,
    Field(
        description="Where to stop before the budget is full: auto (the threshold "
        "tuning chose, or the largest score gap on an uncalibrated index), none (fill "
        "the budget), or a P(relevant) threshold from 0 to 1."
    ),
]


def _mode_type() -> Any:
    """The ``mode`` argument's type, listing the modes registered when the server is built."""
    modes = ", ".join(api.names("mode"))
    return Annotated[
        str | None, Field(description=f"Retrieval mode: {modes}; default: the index's.")
    ]


def add_read_tools(server: StrictServer, service: agent.Sessions) -> None:
    """Register the read-only tools: select, search, get_chunk, get_document, explain, info."""
    mode_t = _mode_type()
    _add_select_tool(server, service, mode_t)
    _add_search_tool(server, service, mode_t)
    _add_reading_tools(server, service, mode_t)


def _add_select_tool(server: StrictServer, service: agent.Sessions, mode_t: Any) -> None:
    """Register ``select``: context under a token budget, never repeated in a session."""
    cap = service.max_result_tokens

    def select(
        query: QueryT,
        ctx: Context,
        budget: Annotated[
            int, int_field("Tokens of context to return, framing included.", agent.MIN_BUDGET, cap)
        ] = agent.DEFAULT_BUDGET,
        mode: mode_t = None,
        detail: DetailT = "snippets",
        refresh: RefreshT = False,
        mmr: MmrT = None,
        promote: PromoteT = False,
        stop: StopT = api.DEFAULT_STOP,
        include: IncludeT = (),
        exclude: ExcludeT = (),
        where: WhereT = (),
    ) -> Annotated[CallToolResult, output_model(agent.ContextMeta)]:
        """Return the best context for a query that fits a token budget.

        The text is the context as `ctxselect select` prints it (one fenced block per
        piece, headed by its source FILE:start-end), then a line per chunk this session
        already received ("already provided: chunk FILE#N lines a-b in call C"; their
        tokens go to new material), then a summary line. The structured result gives the
        new pieces' ids and lines, how many references, and costs: tokens_used,
        tokens_saved, result_tokens, the session's cumulative tokens, the ranked chunks
        not sent, why it stopped. mmr trades relevance for
        diversity; promote sends whole sections. include, exclude and where rank only the
        documents they keep (the note names a filter that keeps none).
        """
        key = session_key(ctx)
        return context_content(
            call(
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
                    include=include,
                    exclude=exclude,
                    where=where,
                )
            )
        )

    register(server, select, "Select context under a token budget", READ_ONLY)


def _add_search_tool(server: StrictServer, service: agent.Sessions, mode_t: Any) -> None:
    """Register ``search``: the k best chunks for a query."""

    def search(
        query: QueryT,
        ctx: Context,
        k: Annotated[int, int_field("How many chunks to rank.", 1, agent.MAX_K)] = (
            agent.DEFAULT_SEARCH_K
        ),
        mode: mode_t = None,
        include: IncludeT = (),
        exclude: ExcludeT = (),
        where: WhereT = (),
    ) -> SearchResult:
        """Rank chunks for a query and return the k best with their text.

        Hits this session already received come back as references instead. include,
        exclude and where rank only the documents they keep, inside the ranking (k
        matching chunks come back when k score); the note names a filter that keeps none.
        """
        key = session_key(ctx)
        filters = {"include": include, "exclude": exclude, "where": where}
        return call(lambda: service.search(key, query, k, mode, **filters))

    register(server, search, "Search chunks", READ_ONLY)


def _add_reading_tools(server: StrictServer, service: agent.Sessions, mode_t: Any) -> None:
    """Register ``get_chunk``, ``get_document``, ``explain`` and ``info``."""

    def get_chunk(chunk_id: ChunkIdT, ctx: Context) -> Passage:
        """Return one chunk's text, with its document, span and line numbers."""
        key = session_key(ctx)
        return call(lambda: service.get_chunk(key, chunk_id))

    def get_document(
        doc_id: Annotated[
            str, text_field("A document id (a path relative to the indexed root).", 1000)
        ],
        ctx: Context,
        start: Annotated[int, int_field("First character (0-based).", 0)] = 0,
        end: Annotated[
            int | None, Field(description="One past the last character; default: the end.")
        ] = None,
    ) -> Passage:
        key = session_key(ctx)
        return call(lambda: service.get_document(key, doc_id, start, end))

    def explain(
        query: QueryT, chunk_id: ChunkIdT, ctx: Context, mode: mode_t = None
    ) -> Explanation:
        """Take a chunk's score for a query apart, term by term (tf, df, idf, contribution)."""
        key = session_key(ctx)
        return call(lambda: service.account(key, service.explain(query, chunk_id, mode)))

    def info(ctx: Context) -> IndexInfo:
        """Describe the index: documents, chunks, tokens, settings, retrieval modes."""
        key = session_key(ctx)
        return call(lambda: service.account(key, service.info()))

    get_document.__doc__ = (
        f"Return text[start:end] of an indexed document: at most {agent.MAX_SPAN_CHARS:,} "
        f"characters and within the result cap; next_start says where to continue."
    )
    tools: list[tuple[Callable[..., Any], str]] = [
        (get_chunk, "Read a chunk"),
        (get_document, "Read a document span"),
        (explain, "Explain a score"),
        (info, "Describe the index"),
    ]
    for fn, title in tools:
        register(server, fn, title, READ_ONLY)


def add_grep_tool(server: StrictServer, service: agent.Sessions) -> None:
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
            text_field(
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
            int, int_field("Lines before and after each matching line.", 0, exact.MAX_CONTEXT)
        ] = exact.DEFAULT_CONTEXT,
        budget: Annotated[
            int,
            int_field(
                "Tokens of matching blocks to return.", agent.MIN_BUDGET, service.max_result_tokens
            ),
        ] = agent.DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, output_model(agent.GrepMeta)]:
        """Find exact text or a regex in the indexed documents, with line numbers.

        Searches only documents whose id matches include and no exclude glob. The text
        gives blocks of matching lines with context lines, in (doc_id, line) order, until
        the budget: each file's name, then its lines as `12:text` (a matching line) or
        `11 text` (context), `--` between blocks; then a line per block this session
        already has ("already provided: FILE lines a-b ... in call C"); then a summary
        line saying how many matches were left out and why it stopped. The structured
        result gives the counts and costs; read more with get_document.
        """
        key = session_key(ctx)
        options = {"fixed": fixed, "ignore_case": ignore_case, "context": context}
        globs = {"include": include, "exclude": exclude}
        return grep_content(
            call(lambda: service.grep(key, pattern, budget=budget, **options, **globs))
        )

    register(server, grep, "Find exact matches", READ_ONLY)


def add_examples_tool(
    server: StrictServer, service: agent.Sessions, library: ExampleLibrary
) -> None:
    cap = service.max_result_tokens

    def examples(
        input: Annotated[
            str, text_field("The new input to find examples for.", fewshot.MAX_INPUT_CHARS)
        ],
        ctx: Context,
        budget: Annotated[
            int, int_field("Tokens of rendered examples.", fewshot.MIN_EXAMPLES_BUDGET, cap)
        ] = fewshot.DEFAULT_EXAMPLES_BUDGET,
        k: Annotated[int, int_field("Examples to choose at most.", 1, fewshot.MAX_EXAMPLES_K)] = (
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

        return call(choose)

    register(server, examples, "Select few-shot examples", READ_ONLY)


def add_write_tools(server: StrictServer, service: agent.Sessions) -> None:
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
        return call(lambda: service.account(key, service.add_paths(paths)))

    def index(ctx: Context) -> WriteResult:
        """Re-scan the indexed roots, index what changed, and reload the index."""
        key = session_key(ctx)
        return call(lambda: service.account(key, service.index_paths()))

    register(server, add, "Index files inside the roots", WRITES)
    register(server, index, "Re-index the roots", WRITES)


__all__ = ["add_examples_tool", "add_grep_tool", "add_read_tools", "add_write_tools"]

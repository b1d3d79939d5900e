"""One vocabulary: each concept's name in the Python API, the CLI and the MCP server.

The rule: the CLI command and the MCP tool are the bare verb (``select``, ``index``,
``add``); the Python module function adds its object (``index_paths``, ``add_paths``,
``remove_documents``), because a bare ``index`` would shadow the ``ctxselect.index``
package and ``add`` says nothing in an import; ``Index`` methods are the bare verb again
(``Index.select``). Where a concept exists on two surfaces its names are these, and its
arguments share their names too (Python keyword ``foo_bar`` = CLI flag ``--foo-bar`` =
MCP argument ``foo_bar`` = JSON key), except for :data:`ARGUMENT_EXCEPTIONS`.

``tests/interfaces/test_interfaces_vocabulary.py`` derives the real CLI commands, MCP
tools and API names and checks them against :data:`TERMS`; ``docs/formats.md`` shows
:func:`markdown` between its vocabulary markers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Term:
    """One concept and its name on each surface (None where a surface lacks it).

    Attributes:
        python: ``index_paths`` (in ``ctxselect``), ``Index.select`` (an ``Index``
            method) or a path below ``ctxselect`` (``api.evaluate.evaluate_corpus``).
        cli: The ``ctxselect`` command.
        mcp: The MCP tool.
        summary: What it does, in a few words.
        also: Other Python callables whose keyword arguments the CLI or MCP front end
            takes for this concept (``Index.rank`` lends ``search`` its ``mmr``); a
            config dataclass lends its fields (``--size`` builds ``ChunkSpec.size``).
    """

    python: str | None
    cli: str | None
    mcp: str | None
    summary: str
    also: tuple[str, ...] = ()


_CHUNK_BM25 = ("config.ChunkSpec", "config.BM25Params")

TERMS: tuple[Term, ...] = (
    # Shared by the CLI and the MCP server.
    Term("Index.select", "select", "select", "the best chunks that fit a token budget"),
    Term("Index.search", "search", "search", "rank chunks for a query", ("Index.rank",)),
    Term("Index.explain", "explain", "explain", "a score, term by term", ("Index.explain_top",)),
    Term("Index.info", "info", "info", "what an index holds and how it was built"),
    Term("agent.grep.grep_index", "grep", "grep", "exact text or a regex, with line numbers"),
    Term("agent.examples.select_examples", "examples", "examples", "few-shot examples"),
    Term(
        "index_paths",
        "index",
        "index",
        "index paths (none: the index's roots), touching only what changed",
        ("watch_paths", *_CHUNK_BM25),
    ),
    Term("add_paths", "add", "add", "index new or changed files into an index"),
    # MCP only: the CLI prints whole results, a model reads by id.
    Term("Index.get_chunk", None, "get_chunk", "one chunk by id"),
    Term(
        "Index.get_document",
        None,
        "get_document",
        "a document (MCP: a span of its text)",
        ("Index.span_text",),
    ),
    # CLI and Python.
    Term("remove_documents", "remove", None, "remove documents by id"),
    Term("compact_index", "compact", None, "fold an index's deltas into its base"),
    Term("verify_index", "verify", None, "check an index's files against their checksums"),
    Term("chunk_file", "chunk", None, "chunk one file (indexes nothing)", ("config.ChunkSpec",)),
    Term(
        "api.evaluate.evaluate_corpus",
        "eval",
        None,
        "metrics of a mode on labeled queries",
        _CHUNK_BM25,
    ),
    Term("api.evaluate.run_lab", "lab", None, "chunk size x budget on labeled queries"),
    Term(
        "api.sweep.run_sweep",
        "sweep",
        None,
        "a grid of settings, evaluated and compared",
        ("api.sweep.sweep_grid",),
    ),
    Term("api.evaluate.session_cost", "cost", None, "what a budget costs over a conversation"),
    Term("api.evaluate.compare_run_files", "compare", None, "two runs, paired significance"),
    Term(
        "api.tune.tune_index",
        "tune",
        None,
        "fusion weights and the stop threshold from labeled queries",
        ("api.calibrate.calibrate_index",),
    ),
    Term(
        "interfaces.mcp_server.build_server",
        "mcp",
        None,
        "serve an index to MCP clients",
        ("interfaces.mcp_server.serve",),
    ),
    # Python only: building blocks the front ends compose.
    Term("open_index", None, None, "open an index to read"),
    Term("build_index", None, None, "index paths and open the result"),
    Term("add_documents", None, None, "index Document values (not paths)"),
    Term("watch_paths", None, None, "re-index while files change (CLI: index --watch)"),
    Term("retriever_for", None, None, "a retriever over chunks in memory"),
    Term("Index.search_many", None, None, "search a batch of queries"),
    Term("Index.filter_note", None, None, "why a filtered search found nothing"),
    Term("Index.note_for", None, None, "filter_note for a Filter value"),
    Term("Index.rank", None, None, "search, then reorder by MMR or a cross-encoder"),
    Term("Index.pack", None, None, "pack ranked hits into a budget"),
    Term("Index.select_ranked", None, None, "select from hits already ranked"),
    Term("Index.promote", None, None, "widen a selection's chunks to their sections"),
    Term("Index.render", None, None, "a selection as the text a prompt holds"),
    Term("Index.explain_top", None, None, "explain the top k hits"),
    Term("Index.span_text", None, None, "text[start:end] of a document"),
    Term("Index.calibration", None, None, "a mode's P(relevant) calibration, if tuned"),
    Term("Index.retriever", None, None, "the retriever of a mode"),
    Term(
        "Index.local_retriever",
        None,
        None,
        "the client-side retriever of a mode, even where the store ranks it",
    ),
    Term("Index.embedder", None, None, "the index's embedder"),
    Term("Index.modes", None, None, "the modes the index can rank with"),
    Term("Index.depth", None, None, "how many hits a budget needs ranked"),
    Term("Index.frame_tokens", None, None, "tokens a hit's framing costs"),
    Term("Index.count_tokens", None, None, "tokens of a text in the index's tokenizer"),
    Term("Index.close", None, None, "release the index's files"),
)
"""Every Python function and ``Index`` method, CLI command and MCP tool, once."""

ARGUMENT_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("cli:*", "json"): "--json picks the CLI's output format; the API returns values",
    ("cli:*", "index"): "--index names the folder; for an Index method it is open_index's index",
    ("mcp:select", "detail"): "session option (Sessions.select): how much text to send",
    ("mcp:select", "refresh"): "session option (Sessions.select): resend what a session has",
    ("cli:index", "watch"): "calls watch_paths (its keywords are index_paths' and interval)",
    ("cli:chunk", "file"): "positional, shown as FILE and never typed; chunk_file's path",
    ("cli:sweep", "no_plots"): "the negation of run_sweep's plots",
    ("cli:sweep", "recommend"): "picks what the CLI prints: the report's recommended budget",
    ("cli:tune", "dry_run"): "the negation of tune_index's and calibrate_index's write",
}
"""(surface:name, argument) -> why the argument has no Python keyword of that name."""

DEPRECATED_TOOLS: dict[str, str] = {
    "select_context": "select",
    "index_info": "info",
    "select_examples": "examples",
    "add_documents": "add",
    "reindex": "index",
}
"""MCP tool names of 0.1 -> today's names. Calls still work in 0.2 (not listed)."""

DEPRECATED_UNTIL = "0.2"
"""The last release whose server still answers the names in :data:`DEPRECATED_TOOLS`."""

MARKERS = (
    "<!-- vocabulary:start (ctxselect.interfaces.vocabulary.markdown(); do not edit) -->",
    "<!-- vocabulary:end -->",
)
"""The lines between which ``docs/formats.md`` holds :func:`markdown`."""


def current_tool(name: str) -> str:
    """Return today's name of MCP tool ``name`` (itself unless it is deprecated)."""
    return DEPRECATED_TOOLS.get(name, name)


def markdown() -> str:
    """Render :data:`TERMS` and the deprecated MCP names as Markdown (for docs/formats.md)."""

    def cell(name: str | None) -> str:
        return f"`{name}`" if name else "-"

    rows = ["| Concept | Python | CLI | MCP |", "| --- | --- | --- | --- |"]
    rows += [f"| {t.summary} | {cell(t.python)} | {cell(t.cli)} | {cell(t.mcp)} |" for t in TERMS]
    old = ", ".join(f"`{a}` -> `{b}`" for a, b in DEPRECATED_TOOLS.items())
    argued = [
        f"- `{arg}` ({'every command' if where.endswith(':*') else where.split(':')[1]}, "
        f"{'CLI' if where.startswith('cli') else 'MCP'}): {why}."
        for (where, arg), why in ARGUMENT_EXCEPTIONS.items()
    ]
    return "\n".join(
        [
            *rows,
            "",
            f"Deprecated MCP tool names, still answered through {DEPRECATED_UNTIL} (not listed; "
            f"each logs a warning on stderr once): {old}.",
            "",
            "Arguments without a Python keyword of the same name:",
            "",
            *argued,
        ]
    )

"""What a ``grep`` result reads as: blocks with line numbers, and small metadata for MCP.

``ctxselect grep`` prints each line with its file (``FILE:LINE: text``, what editors and
tools that jump to ``file:line`` read). Over MCP every token of a result stays in the
conversation, so the file heads its blocks once and each line carries only its number,
much as ``rg --heading -n`` prints it: ``12:text`` for a matching line, ``11 text`` for a
context line, ``--`` between blocks of one file. The MCP result is that text block (then
one line per reference, then one summary line) plus :class:`GrepMeta`, counts without
texts; :func:`grep_wire` is both as they travel, which ``result_tokens`` counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxselect.agent.grep import (
    STOP_SEPARATOR,
    GrepBlock,
    GrepReference,
    GrepResult,
    scan_stop,
)
from ctxselect.agent.limits import compact_json
from ctxselect.types import one_line


def block_lines(block: GrepBlock, *, with_file: bool) -> list[str]:
    """The lines of ``block``, each after its number.

    With ``with_file`` as ``grep -n`` prints several files: ``FILE:12: text`` for a
    matching line, ``FILE-11- text`` for a context line. Without: ``12:text`` and
    ``11 text``, a token less per context line than ``rg -n``'s ``11-text``.
    """
    matched = {m.line for m in block.matches}
    out = []
    for offset, line in enumerate(block.text.removesuffix("\n").split("\n")):
        number = block.line_start + offset
        mark = ":" if number in matched else "-"
        if with_file:
            where = f"{one_line(block.doc_id)}{mark}{number}{mark} "
        else:
            where = f"{number}:" if number in matched else f"{number} "
        out.append(f"{where}{line}".rstrip())
    return out


def grep_lines(blocks: Sequence[GrepBlock], *, with_file: bool) -> str:
    """The blocks as lines: a line naming each file before its blocks (a blank line before
    the next file), ``--`` between two blocks of one file (:func:`block_lines`)."""
    out: list[str] = []
    previous = None
    for block in blocks:
        if block.doc_id != previous:
            name = one_line(block.doc_id)  # a newline in an id would look like a line
            out.extend(["", name] if previous is not None else [name])
            previous = block.doc_id
        else:
            out.append("--")
        out.extend(block_lines(block, with_file=with_file))
    return "".join(line + "\n" for line in out)


def grep_summary(result: GrepResult) -> str:
    """The summary line of an MCP ``grep`` result: what was found, sent and left out, the
    tokens used, the rules that ended it (:func:`grep_stop_rule`) and the note."""
    shown = sum(len(b.matches) for b in result.blocks)
    found = (
        f"{_plural(result.matches, 'matching line')} in "
        f"{_plural(result.documents, 'document')} searched"
    )
    parts = [f"{shown} shown"] if result.matches else []
    if result.references:
        parts.append(f"{sum(len(r.lines) for r in result.references)} already provided")
    parts += [f"{result.matches_left_out} left out"] if result.matches_left_out else []
    facts = [
        f"{found}: {', '.join(parts)}" if parts else found,
        f"{result.tokens_used} of {result.budget} tokens",
        f"stop: {grep_stop_rule(result.stop)}",
    ]
    if not result.matches and result.note:
        facts = []  # the note says what was searched and that nothing matched
    facts += [result.note] if result.note else []
    return f"[ctxselect: {'; '.join(facts)}]\n"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def grep_text(result: GrepResult) -> str:
    """Return the text block of an MCP ``grep`` result: what a client model reads.

    The blocks as :func:`grep_lines` writes them without the file on each line, a blank
    line, one line per reference, then the summary line (:func:`grep_summary`).
    """
    body = grep_lines(result.blocks, with_file=False)
    refs = "".join(r.text + "\n" for r in result.references)
    gap = "\n" if body and refs else ""
    return f"{body}{gap}{refs}{grep_summary(result)}"


@dataclass(frozen=True, slots=True)
class GrepMeta:
    """The structured part of an MCP ``grep`` result: counts, no texts, no per-match objects.

    The same accounting as :class:`~ctxselect.agent.grep.GrepResult`, whose blocks and
    reference lines travel once, in the text block (:func:`grep_text`). ``blocks`` and
    ``references`` count them; ``documents`` were searched, ``matches`` matching lines
    found there, ``matches_left_out`` of them are in no block or reference;
    ``tokens_used`` (block texts plus reference lines) never exceeds the budget;
    ``result_tokens`` is :func:`grep_wire` of the whole result in the index's tokenizer.
    ``stop`` names the rules that ended the result (``all matches``, ``budget full``,
    ``result cap``, ``match cap``, ``time limit``, the last two joined to another by
    ``; then ``), the text's summary line gives them in full; ``note`` says why a result
    is empty or was cut.
    """

    blocks: int
    references: int
    documents: int
    matches: int
    matches_left_out: int
    tokens_used: int
    call: int
    result_tokens: int
    session_tokens: int
    stop: str
    note: str = ""


def grep_stop_rule(stop: str) -> str:
    """The rules a grep ``stop`` names, without their details: ``match cap: more than ...;
    then budget full: the next block ...`` gives ``match cap; then budget full``."""
    parts = stop.split(STOP_SEPARATOR, 1) if scan_stop(stop) else [stop]
    return STOP_SEPARATOR.join(part.split(": ", 1)[0] for part in parts)


def grep_meta(result: GrepResult) -> GrepMeta:
    """Return the structured metadata of ``result`` (counts and costs; no text)."""
    fields: dict[str, Any] = {
        f.name: getattr(result, f.name) for f in dataclasses.fields(GrepMeta)
    } | {
        "blocks": len(result.blocks),
        "references": len(result.references),
        "stop": grep_stop_rule(result.stop),
    }
    return GrepMeta(**fields)


def grep_structured(result: GrepResult) -> dict[str, Any]:
    """Return the structured content of ``result``: :class:`GrepMeta` as a dict."""
    return dataclasses.asdict(grep_meta(result))


def grep_wire(result: GrepResult) -> str:
    """Return what an MCP client receives for ``result``: the text block, then the
    metadata as compact JSON (the form ``structuredContent`` travels in)."""
    return grep_text(result) + compact_json(grep_structured(result))


def item_tokens(count: Callable[[str], int], item: GrepBlock | GrepReference) -> int:
    """At most what a block or reference adds to :func:`grep_text`, counted with ``count``.

    A block on its own, without the line naming its file or the ``--`` before it; a
    reference, its line. One token less than that, as joined texts can share a token at
    their seam (two newlines are one token), so that a sum of these never passes the
    text's own count (:func:`ctxselect.agent.grep_session.fit_grep` relies on it).
    """
    if isinstance(item, GrepReference):
        return max(0, item.tokens - 1)
    return max(0, count("".join(line + "\n" for line in block_lines(item, with_file=False))) - 1)

"""Record a real MCP session with ``ctxselect mcp`` and write it into docs/11-mcp.md.

Copies chapters 01-10 of docs/ to a temporary folder, indexes them with ``ctxselect
index``, starts ``ctxselect mcp`` as a subprocess and talks to it over stdio with the MCP
SDK's own client: lists the tools, asks a question with select, asks it again
(identical), asks a second question, asks it again with stop=none (fill the budget) and then
in a new session (a second server process) for comparison, reads one chunk, greps for an
exact name in one chapter, asks a third question with select filtered to two chapters, and
makes one call that fails. The transcript goes
between the markers in docs/11-mcp.md; the numbers are printed as JSON lines: per call
tokens_used, result_tokens (everything the client received: the text block plus the
structured content as compact JSON) and new_tokens (new material: the pieces' tokens), and
for the identical repeat its new material as a share of the first call's tokens_used.
Prints, never asserts.

    python bench/mcp_transcript.py            # rewrite the transcript in docs/11-mcp.md
    python bench/mcp_transcript.py --dry-run  # print it instead
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
CHAPTER = REPO / "docs" / "11-mcp.md"
START = "<!-- transcript:start (written by bench/mcp_transcript.py; do not edit by hand) -->"
END = "<!-- transcript:end -->"
FIRST = "How does the markdown chunker split a document at its headings?"
SECOND = "What header does a markdown chunk get, and what is its parent section?"
BUDGET = 1500
CALLS = ((FIRST, ""), (FIRST, ""), (SECOND, ""), (SECOND, "none"))
"""Session 1's select calls: (query, stop argument; "" leaves the default, auto)."""
GREP = {"pattern": "parent_id", "fixed": True, "include": ["03-*.md"], "context": 1,
        "budget": 400}  # fmt: skip
FILTERED = {"query": "Where does a selection stop before the budget is full?", "budget": 800,
            "include": ["05-*.md", "07-*.md"], "where": ["kind=markdown"]}  # fmt: skip
"""Session 1's grep call and its filtered select call."""


def _n(count: int, one: str, many: str | None = None) -> str:
    """``count`` with its noun, singular for one: ``1 reference``, ``3 references``."""
    return f"{count} {one if count == 1 else many or one + 's'}"


def _env() -> dict[str, str]:
    # The SDK gives a server a minimal environment; keep this interpreter's import path.
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


def _index(work: Path) -> None:
    chapters = work / "chapters"
    chapters.mkdir()
    for path in sorted((REPO / "docs").glob("[01][0-9]-*.md")):
        if path.name < "11":
            shutil.copy(path, chapters / path.name)
    command = [sys.executable, "-m", "ctxselect", "index", "chapters", "--index", "ix"]
    subprocess.run(command, cwd=work, check=True, capture_output=True, env=os.environ | _env())


async def _call(client: Client, log: list[str], name: str, args: dict[str, Any]) -> Any:
    log.append(f"→ {name} {json.dumps(args, ensure_ascii=False)}")
    result = await client.call_tool(name, args)
    if result.is_error:
        log.append(f"← error: {result.content[0].text}")
        return None
    text = "".join(block.text for block in result.content if block.type == "text")
    return result.structured_content | {"_text": text}


def _flat(text: str, width: int = 58) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _context_lines(result: dict[str, Any]) -> list[str]:
    """The text block abbreviated (each piece's opening line and first words), then the
    structured content without its piece and reference lists (the text shows them)."""
    lines = ["← text:"]
    fence, opened = "", False
    for line in result["_text"].splitlines():
        if fence and line == fence:
            fence = ""
        elif fence:
            if opened:
                lines.append(f"    {_flat(line)}")
            opened = False
        elif line.startswith("~~~"):
            fence, opened = line.split(" ", 1)[0], True
            lines.append(f"    {line}")
        elif line:
            lines.append(f"    {line}")
    meta = {k: v for k, v in result.items() if k not in ("_text", "pieces", "references")}
    pieces = [" ".join(p["chunk_ids"]) for p in result["pieces"]]
    lines.append(f"← structured: pieces {pieces}; {json.dumps(meta, ensure_ascii=False)}")
    return lines


async def _session(work: Path, log: list[str], numbers: list[dict[str, Any]]) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ctxselect", "mcp", "--index", "ix"], cwd=work,
        env=_env(),
    )  # fmt: skip
    with open(work / "stderr.txt", "w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = (await client.list_tools()).tools
            log.append("→ tools/list")
            log.append("← " + ", ".join(t.name for t in tools))
            for query, stop in CALLS:
                log.append("")
                args = {"query": query, "budget": BUDGET} | ({"stop": stop} if stop else {})
                result = await _call(client, log, "select", args)
                log.extend(_context_lines(result))
                numbers.append({"session": 1, "query": query, "stop_arg": stop or "auto"})
                numbers[-1] |= _numbers(result)
            numbers[1]["repeat_share"] = round(
                numbers[1]["new_tokens"] / numbers[0]["tokens_used"], 4
            )
            log.append("")
            refs = numbers[1]["references"]  # what the identical repeat referenced
            chunk_id = refs[0] if refs else None
            if chunk_id:
                passage = await _call(client, log, "get_chunk", {"chunk_id": chunk_id})
                log.append(
                    f"← {passage['doc_id']} lines {passage['line_start']}-{passage['line_end']}, "
                    f"{passage['tokens']} tokens; note: {passage['note']}"
                )
                log.append("")
            found = await _call(client, log, "grep", GREP)
            log.extend(_grep_lines(found))
            numbers.append({"session": 1, "grep": GREP["pattern"]} | _grep_numbers(found))
            log.append("")
            filtered = await _call(client, log, "select", FILTERED)
            log.extend(_context_lines(filtered))
            numbers.append({"session": 1, "query": FILTERED["query"], "filter": True})
            numbers[-1] |= _numbers(filtered)
            log.append("")
            await _call(client, log, "select", {"query": SECOND, "budget": 50})
    log.insert(
        0,
        "[stderr] ctxselect mcp: "
        + (work / "stderr.txt").read_text().split("ctxselect mcp: ")[-1].strip(),
    )


async def _fresh(work: Path, log: list[str], numbers: list[dict[str, Any]]) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ctxselect", "mcp", "--index", "ix"], cwd=work,
        env=_env(),
    )  # fmt: skip
    with open(os.devnull, "w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            args = {"query": SECOND, "budget": BUDGET, "stop": "none"}
            result = await _call(client, log, "select", args)
            log.extend(_context_lines(result))
            numbers.append({"session": 2, "query": SECOND, "stop_arg": "none"} | _numbers(result))


def _grep_lines(result: dict[str, Any]) -> list[str]:
    """The text block (each line cut to a width), then the structured content (counts)."""
    lines = ["← text:"]
    lines.extend(f"    {_flat(line, 90)}" for line in result["_text"].splitlines())
    meta = {k: v for k, v in result.items() if k != "_text"}
    lines.append(f"← structured: {json.dumps(meta, ensure_ascii=False)}")
    return lines


def _grep_numbers(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("documents", "matches", "matches_left_out", "tokens_used", "result_tokens", "stop")
    return {k: result[k] for k in keys} | {
        "blocks": result["blocks"],
        "references": result["references"],
        "overhead": round(result["result_tokens"] / max(1, result["tokens_used"]), 4),
    }


def _numbers(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("tokens_used", "tokens_saved", "result_tokens", "session_tokens", "stop")
    return {k: result.get(k) for k in keys} | {
        "new_tokens": sum(p["tokens"] for p in result["pieces"]),
        "overhead": round(result["result_tokens"] / max(1, result["tokens_used"]), 4),
        "pieces": [p["chunk_ids"] for p in result["pieces"]],
        # the structured content counts the references; their ids are in the text lines
        "references": [
            line.split(" ")[3]
            for line in result["_text"].splitlines()
            if line.startswith("already provided: chunk ")
        ],
    }


def transcript() -> tuple[str, list[dict[str, Any]]]:
    """Run the sessions and return the Markdown transcript and the numbers."""
    numbers: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _index(work)
        first: list[str] = []
        anyio.run(_session, work, first, numbers)
        second: list[str] = []
        anyio.run(_fresh, work, second, numbers)
    one, repeat, two, filled, grepped, filtered = numbers[:6]
    text = "\n".join(
        [
            "Made by `python bench/mcp_transcript.py`: chapters 01-10 copied to `chapters/`, "
            "`ctxselect index chapters --index ix`, then the MCP SDK's stdio client started "
            "`ctxselect mcp --index ix` and made these calls (→ request, ← result, "
            "abbreviated; texts cut to a line).",
            "",
            "```text",
            *first,
            "```",
            "",
            f"The first call used {one['tokens_used']} tokens of context (stop: {one['stop']}) "
            f"and the whole result was {one['result_tokens']} tokens: the text block plus the "
            f"structured content, as the client received them. Asked again, the same question "
            f"came back as {_n(len(repeat['references']), 'reference')} plus "
            f"{repeat['new_tokens']} "
            f"tokens of new material ({repeat['repeat_share']:.0%} of the first call's "
            f"tokens_used). The second question used {two['tokens_used']} tokens "
            f"(stop: {two['stop']}). Asked again with stop=none, which fills the budget, "
            f"{len(filled['references'])} of its chunks "
            f"{'was' if len(filled['references']) == 1 else 'were'} already in the conversation "
            "and "
            f"came back as references, saving {filled['tokens_saved']} tokens; the budget went "
            "to chunks the session had not seen. `grep` found "
            f"{grepped['matches']} matching lines of `{GREP['pattern']}` in "
            f"{_n(grepped['documents'], 'document')} (the include glob): "
            f"{_n(grepped['blocks'], 'new block')} with line numbers, and "
            f"{_n(grepped['references'], 'reference')} to lines the "
            f"earlier selections had already sent, {grepped['tokens_used']} tokens in all; the "
            f"whole result, text block and counts, was {grepped['result_tokens']} tokens. "
            f"The filtered select ranked only chapters 05 and 07 and used "
            f"{filtered['tokens_used']} tokens (stop: {filtered['stop']}). The same request "
            "as the last select in a new session (a second `ctxselect mcp` process) sends "
            "those chunks again:",
            "",
            "```text",
            *second,
            "```",
        ]
    )
    return text, numbers


def main() -> None:
    """Write (or with --dry-run print) the transcript, and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="Print instead of writing.")
    args = parser.parse_args()
    text, numbers = transcript()
    for row in numbers:
        print(json.dumps(row, ensure_ascii=False))
    if args.dry_run:
        print(text)
        return
    chapter = CHAPTER.read_text(encoding="utf-8")
    head, _, rest = chapter.partition(START)
    _, _, tail = rest.partition(END)
    CHAPTER.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")
    print(f"wrote the transcript into {CHAPTER.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()

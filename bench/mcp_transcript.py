"""Record a real MCP session with ``ctxselect mcp`` and write it into docs/11-mcp.md.

Copies chapters 01-10 of docs/ to a temporary folder, indexes them with ``ctxselect
index``, starts ``ctxselect mcp`` as a subprocess and talks to it over stdio with the MCP
SDK's own client: lists the tools, asks two overlapping questions with select_context,
asks the second one again in a new session (a second server process) for comparison,
reads one chunk, and makes one call that fails. The transcript goes between the markers
in docs/11-mcp.md; the numbers are printed as JSON lines. Prints, never asserts.

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
    return result.structured_content


def _flat(text: str, width: int = 58) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _context_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for piece in result["pieces"]:
        ids = " ".join("#" + c.rsplit("#", 1)[1] for c in piece["chunk_ids"])
        lines.append(
            f"← piece {piece['doc_id']} lines {piece['line_start']}-{piece['line_end']} "
            f'(chunks {ids}), {piece["tokens"]} tokens: "{_flat(piece["text"])}"'
        )
    lines.extend(f"← reference ({r['tokens']} tokens): {r['text']}" for r in result["references"])
    first = result["dropped"][0] if result["dropped"] else None
    dropped = f"{result['dropped_total']} ranked chunks left out"
    if first:
        dropped += f" (first: {first['chunk_id']}, {first['reason']})"
    lines.append(
        f"← tokens_used {result['tokens_used']} of budget {result['budget']}; "
        f"tokens_saved {result['tokens_saved']}; result_tokens {result['result_tokens']}; "
        f"session_tokens {result['session_tokens']}; call {result['call']}; {dropped}"
    )
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
            for query in (FIRST, SECOND):
                log.append("")
                result = await _call(
                    client, log, "select_context", {"query": query, "budget": BUDGET}
                )
                log.extend(_context_lines(result))
                numbers.append({"session": 1, "query": query} | _numbers(result))
            log.append("")
            chunk_id = result["references"][0]["chunk_id"] if result["references"] else None
            if chunk_id:
                passage = await _call(client, log, "get_chunk", {"chunk_id": chunk_id})
                log.append(
                    f"← {passage['doc_id']} lines {passage['line_start']}-{passage['line_end']}, "
                    f"{passage['tokens']} tokens; note: {passage['note']}"
                )
                log.append("")
            await _call(client, log, "select_context", {"query": SECOND, "budget": 50})
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
            result = await _call(client, log, "select_context", {"query": SECOND, "budget": BUDGET})
            log.extend(_context_lines(result))
            numbers.append({"session": 2, "query": SECOND} | _numbers(result))


def _numbers(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("tokens_used", "tokens_saved", "result_tokens", "session_tokens")
    return {k: result[k] for k in keys} | {
        "pieces": [p["chunk_ids"] for p in result["pieces"]],
        "references": [r["chunk_id"] for r in result["references"]],
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
    saved = numbers[1]["tokens_saved"]
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
            f"The second question overlaps the first: {len(numbers[1]['references'])} of its "
            f"best chunks were already in the conversation, so they came back as references, "
            f"saving {saved} tokens, and the budget went to chunks the session had not seen. "
            "The same question in a new session (a second `ctxselect mcp` process) sends "
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

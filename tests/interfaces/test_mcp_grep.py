"""The MCP grep tool in process: schema, results, accounting, session references, errors."""

from __future__ import annotations

import dataclasses
import json
import re

import anyio
import pytest
from mcp import Client

from _support.grep_corpus import build
from _support.sessions_corpus import build_demo
from ctxselect import agent, api
from ctxselect.agent.grep import GrepBlock, GrepMatch, GrepReference, GrepResult, grep_index
from ctxselect.agent.grep_session import fit_grep
from ctxselect.agent.grep_text import grep_stop_rule
from ctxselect.agent.results import Meter
from ctxselect.interfaces.mcp_server import build_server, output_model, to_text
from ctxselect.tokens import get_counter

COUNT = get_counter("cl100k").count


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("mcp-grep"))


def run(server, scenario):
    async def main():
        async with Client(server) as client:
            return await scenario(client)

    return anyio.run(main)


async def call(client, **arguments):
    result = await client.call_tool("grep", arguments)
    if result.is_error:
        return result.content[0].text
    [block] = result.content  # one text block: the lines, the references, a summary line
    meta = result.structured_content
    assert '"text"' not in json.dumps(meta) and "matches" in meta  # counts, no texts
    wire = block.text + json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
    return meta | {"_text": block.text, "_wire": wire}


def test_schema_uses_the_cli_and_api_names_and_bounds(folder):
    async def scenario(client):
        return {t.name: t for t in (await client.list_tools()).tools}["grep"]

    tool = run(build_server(api.open_index(folder), max_result_tokens=5000), scenario)
    props = tool.input_schema["properties"]
    assert list(props) == [
        "pattern", "fixed", "ignore_case", "include", "exclude", "context", "budget"
    ]  # fmt: skip
    assert tool.input_schema["required"] == ["pattern"]
    assert props["budget"].items() >= {"minimum": 100, "maximum": 5000, "default": 2000}.items()
    assert props["context"].items() >= {"minimum": 0, "maximum": 20, "default": 2}.items()
    assert props["include"]["type"] == "array" and props["include"]["maxItems"] == 50
    assert tool.annotations.read_only_hint is True
    out = tool.output_schema["properties"]
    assert {"blocks", "references", "matches_left_out", "stop", "result_tokens"} <= set(out)


def test_grep_returns_blocks_with_the_session_accounting(folder):
    async def scenario(client):
        first = await call(client, pattern="parse_header", include=["*.py"], context=1)
        second = await call(client, pattern="MAX_RESULT_TOKENS", ignore_case=True, context=0)
        return first, second

    first, second = run(build_server(api.open_index(folder), max_result_tokens=5000), scenario)
    # the file once, then 12:text (a matching line) and 11 text (context)
    assert first["_text"].startswith(
        'src/app.py\n5\n6:def parse_header(line):\n7     """Split a header line."""\n\n'
        "src/util/helpers.py\n1:def parse_header_fast(line):\n"
        '2     return line.split(":", 1)\n'
        "[ctxselect: 2 matching lines in 2 documents searched: 2 shown;"
    )
    assert first["blocks"] == 2 and first["references"] == 0 and first["matches"] == 2
    for result in (first, second):
        assert result["result_tokens"] == COUNT(result["_wire"]) <= 5000
        assert result["tokens_used"] <= 2000 and result["stop"] == "all matches"
    assert (first["call"], second["call"]) == (1, 2)
    assert second["session_tokens"] == first["result_tokens"] + second["result_tokens"]
    assert second["_text"].startswith("docs/guide.md\n7:The server reads MAX_RESULT_TOKENS")
    assert "\n\nsrc/app.py\n12:def max_result_tokens():\n" in second["_text"]


def test_a_repeat_comes_back_as_references(folder):
    args = {"pattern": "needle", "include": ["long.md"], "context": 3, "budget": 300}

    async def scenario(client):
        return await call(client, **args), await call(client, **args)

    first, second = run(build_server(api.open_index(folder)), scenario)
    sent = line_ranges(first["_text"])
    assert sent and first["references"] == 0 and first["blocks"] == len(sent)
    refs = [line for line in second["_text"].splitlines() if line.startswith("already provided")]
    assert refs == [
        f"already provided: docs/long.md lines {a}-{b} (matches on line {a + 3}) in call 1"
        for a, b in sent
    ]
    assert second["references"] == len(sent)
    assert min(a for a, _ in line_ranges(second["_text"])) > max(b for _, b in sent)


def line_ranges(text):
    """(first, last) line of each block in a grep text block."""
    ranges, numbers = [], []
    for line in [*text.splitlines(), ""]:
        found = re.match(r"(\d+)(:| |$)", line)
        if found:
            numbers.append(int(found.group(1)))
        elif numbers:
            ranges.append((numbers[0], numbers[-1]))
            numbers = []
    return ranges


def test_a_result_never_passes_the_cap(folder):
    async def scenario(client):
        return await call(client, pattern=r"\w", context=0, budget=1000)

    result = run(build_server(api.open_index(folder), max_result_tokens=1000), scenario)
    assert result["result_tokens"] == COUNT(result["_wire"]) <= 1000
    assert result["matches_left_out"] > 0


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"pattern": "a(b"}, "invalid regex 'a(b' at position 3: missing )"),
        ({"pattern": "x", "include": ["[x"]}, "invalid include glob '[x' at position 0"),
        ({"pattern": "x", "budget": 20001}, "above the result cap of 20000 tokens"),
        ({"pattern": "x", "context": 21}, "context must be between 0 and 20 lines"),
        ({"pattern": "x", "paths": ["a"]}, "paths"),
        # compiled, it would take ~270 GB: the server was killed by the OOM killer
        ({"pattern": "x{1000000000}"}, "repeats too much: its counted repeats"),
    ],
)
def test_bad_input_is_a_tool_error(folder, arguments, words):
    async def scenario(client):
        return await call(client, **arguments)

    message = run(build_server(api.open_index(folder)), scenario)
    assert isinstance(message, str) and words in message


def test_empty_results_say_which_filter_or_that_nothing_matched(folder):
    async def scenario(client):
        return (
            await call(client, pattern="parse", include=["*.rs"]),
            await call(client, pattern="parse", include=["src/"], exclude=["*.py"]),
            await call(client, pattern="zzz_nothing"),
        )

    by_include, by_exclude, nothing = run(build_server(api.open_index(folder)), scenario)
    assert by_include["blocks"] == 0 and by_include["note"].startswith("include '*.rs'")
    assert by_include["_text"] == f"[ctxselect: {by_include['note']}]\n"
    assert by_exclude["note"] == "exclude '*.py' leaves none of the 2 documents include kept"
    assert nothing["note"] == "no match for 'zzz_nothing' in 5 documents"


def test_grep_result_json_is_pinned():
    match = GrepMatch(6, 32, 44)
    block = GrepBlock("a.py", 26, 60, 5, 7, (match,), ("a.py#0",), 9, "x\ndef parse():\ny\n")
    ref = GrepReference("b.md", 0, 90, 1, 4, (2,), 1, 20, 11, "already provided: ...")
    result = GrepResult(
        "parse", (block,), (ref,), 5, 2, 0, 29, 2000, "all matches", 3, 700, 300, 20000
    )
    wire = {
        "pattern": "parse",
        "blocks": [{
            "doc_id": "a.py", "start": 26, "end": 60, "line_start": 5, "line_end": 7,
            "matches": [{"line": 6, "start": 32, "end": 44}], "chunk_ids": ["a.py#0"],
            "tokens": 9, "text": "x\ndef parse():\ny\n",
        }],
        "references": [{
            "doc_id": "b.md", "start": 0, "end": 90, "line_start": 1, "line_end": 4,
            "lines": [2], "call": 1, "tokens": 20, "tokens_saved": 11,
            "text": "already provided: ...",
        }],
        "documents": 5, "matches": 2, "matches_left_out": 0, "tokens_used": 29, "budget": 2000,
        "stop": "all matches", "call": 3, "session_tokens": 700, "result_tokens": 300,
        "max_result_tokens": 20000, "note": "",
    }  # fmt: skip
    # The API value (and `ctxselect grep --json`) keeps every field, in this order.
    assert json.loads(json.dumps(dataclasses.asdict(result))) == wire
    assert list(dataclasses.asdict(result)) == list(wire)
    # Over MCP: the text block once, then counts as compact JSON; result_tokens counts both.
    text = (
        "a.py\n5 x\n6:def parse():\n7 y\n\nalready provided: ...\n[ctxselect: 2 matching "
        "lines in 5 documents searched: 1 shown, 1 already provided; 29 of 2000 tokens; "
        "stop: all matches]\n"
    )
    meta = {
        "blocks": 1, "references": 1, "documents": 5, "matches": 2, "matches_left_out": 0,
        "tokens_used": 29, "call": 3, "result_tokens": 300, "session_tokens": 700,
        "stop": "all matches", "note": "",
    }  # fmt: skip
    assert agent.grep_text(result) == text and agent.grep_structured(result) == meta
    assert to_text(result) == text + json.dumps(meta, separators=(",", ":"))
    assert list(output_model(agent.GrepMeta).model_json_schema()["properties"]) == list(meta)


def test_the_stop_rules_keep_a_scan_stop_first():
    late = "time limit: scanning passed 5 s after 3 of 9 documents: narrow include"
    full = "budget full: the next block (a.md lines 1-2) needs 9 tokens and 3 are left"
    assert grep_stop_rule(f"{late}; then {full}") == "time limit; then budget full"
    assert grep_stop_rule(full) == "budget full" and grep_stop_rule("all matches") == "all matches"


def test_a_result_is_the_block_text_and_little_more(tmp_path):
    """Issue 10: result_tokens <= 1.15 x the block text's tokens + 100 (it was 18 x)."""
    folder = build_demo(tmp_path)
    patterns = ("budget", "chunk", "parent_id", "select")

    async def scenario(client):
        return [await call(client, pattern=p, include=["*.md"]) for p in patterns]

    with api.open_index(folder) as index:
        results = run(build_server(index), scenario)
        for result in results:
            assert result["result_tokens"] == COUNT(result["_wire"])
            assert result["tokens_used"] > 0
            assert result["result_tokens"] <= 1.15 * result["tokens_used"] + 100


def test_the_cap_holds_more_blocks_than_the_json_did(folder):
    """The same cut to a 1,000-token cap, measured as sent now and as indented JSON (before)."""
    with api.open_index(folder) as index:
        # 40 one-line blocks: every fifth line of docs/long.md
        found = grep_index(index, r"^(needle|hay line \d*5 )", context=0, budget=1000)
        found = dataclasses.replace(found, call=1, max_result_tokens=1000)
        now = fit_grep(Meter(index.count_tokens, to_text, 1000), found, 0)
        before = fit_grep(Meter(index.count_tokens, agent.to_json, 1000), found, 0)
    assert COUNT(to_text(now)) <= 1000 and COUNT(agent.to_json(before)) <= 1000
    assert len(now.blocks) >= 4 * len(before.blocks) > 0

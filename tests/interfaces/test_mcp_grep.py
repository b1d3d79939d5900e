"""The MCP grep tool in process: schema, results, accounting, session references, errors."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from _support.grep_corpus import build
from ctxselect import api
from ctxselect.agent.grep import GrepBlock, GrepMatch, GrepReference, GrepResult
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
    text = result.content[0].text
    assert json.loads(text) == result.structured_content  # text block = structured output
    return result.structured_content | {"_text": text}


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
    assert [b["doc_id"] for b in first["blocks"]] == ["src/app.py", "src/util/helpers.py"]
    assert first["blocks"][0]["matches"] == [{"line": 6, "start": 32, "end": 44}]
    for result in (first, second):
        assert result["result_tokens"] == COUNT(result["_text"]) <= 5000
        assert result["tokens_used"] <= result["budget"]
    assert (first["call"], second["call"]) == (1, 2)
    assert second["session_tokens"] == first["result_tokens"] + second["result_tokens"]
    assert {b["doc_id"] for b in second["blocks"]} == {"docs/guide.md", "src/app.py"}


def test_a_repeat_comes_back_as_references(folder):
    args = {"pattern": "needle", "include": ["long.md"], "context": 3, "budget": 300}

    async def scenario(client):
        return await call(client, **args), await call(client, **args)

    first, second = run(build_server(api.open_index(folder)), scenario)
    sent = [(b["start"], b["end"]) for b in first["blocks"]]
    assert sent and first["references"] == []
    assert [(r["start"], r["end"]) for r in second["references"]] == sent
    assert all(
        r["call"] == 1 and r["text"].startswith("already provided: ") for r in second["references"]
    )
    assert not {(b["start"], b["end"]) for b in second["blocks"]} & set(sent)


def test_a_result_never_passes_the_cap(folder):
    async def scenario(client):
        return await call(client, pattern=r"\w", context=0, budget=1000)

    result = run(build_server(api.open_index(folder), max_result_tokens=1000), scenario)
    assert result["result_tokens"] == COUNT(result["_text"]) <= 1000
    assert result["matches_left_out"] > 0


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"pattern": "a(b"}, "invalid regex 'a(b' at position 3: missing )"),
        ({"pattern": "x", "include": ["[x"]}, "invalid include glob '[x' at position 0"),
        ({"pattern": "x", "budget": 20001}, "above the result cap of 20000 tokens"),
        ({"pattern": "x", "context": 21}, "context must be between 0 and 20 lines"),
        ({"pattern": "x", "paths": ["a"]}, "paths"),
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
    assert by_include["blocks"] == [] and by_include["note"].startswith("include '*.rs'")
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
    assert to_text(result) == json.dumps(wire, indent=2, ensure_ascii=False)
    model = output_model(GrepResult)
    assert list(model.model_json_schema()["properties"]) == list(wire)
    dumped = model.model_validate(result).model_dump_json()
    assert dumped == json.dumps(wire, ensure_ascii=False, separators=(",", ":"))

"""`ctxselect mcp` as a real subprocess, spoken to over stdio by the MCP SDK's own client."""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from _support.mcp_refs import reference_ids
from _support.sessions_corpus import DEMO_FIRST, FIRST, SECOND, build, build_demo
from ctxselect.tokens import get_counter

COUNT = get_counter("cl100k").count


def _params(folder):
    # The SDK gives the child a minimal environment; keep the import path the tests use.
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ctxselect", "mcp", "--index", folder], env=env
    )


def test_stdio_session_lists_tools_and_dedups_a_repeat(tmp_path):
    _, folder = build(tmp_path)
    params = _params(folder)
    log = tmp_path / "stderr.txt"

    async def session():
        with log.open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = [t.name for t in (await client.list_tools()).tools]
                fill = {"budget": 300, "stop": "none"}
                first = await client.call_tool("select", {"query": FIRST} | fill)
                second = await client.call_tool("select", {"query": SECOND} | fill)
                typo = await client.call_tool("select", {"query": FIRST, "bugdet": 300})
                write = await client.call_tool("index", {})
                old = [await client.call_tool("index_info", {}) for _ in range(2)]
        refused = [r.content[0].text for r in (typo, write, *old) if r.is_error]
        second_text = second.content[0].text
        return tools, first.structured_content, second.structured_content, refused, old, second_text

    tools, first, second, refused, old, second_text = anyio.run(session)
    assert len(refused) == 2 and "unknown argument 'bugdet' (did you mean 'budget'?)" in refused[0]
    assert "`ctxselect mcp --allow-write`" in refused[1]
    assert {"select", "search", "get_chunk", "get_document"} <= set(tools)
    sent = {c for piece in first["pieces"] for c in piece["chunk_ids"]}
    assert first["references"] == 0 and sent
    referenced = reference_ids(second_text)
    assert second["references"] == len(referenced) > 0, "overlap should come back as references"
    assert set(referenced) <= sent
    assert second["tokens_saved"] > 0
    assert not {c for piece in second["pieces"] for c in piece["chunk_ids"]} & sent
    assert second["session_tokens"] == first["result_tokens"] + second["result_tokens"]
    # stdout carried only protocol messages; the banner went to stderr.
    assert log.read_text(encoding="utf-8").startswith("ctxselect mcp: serving ")
    # A 0.1 name still answers, and stderr says once that it is deprecated (the SDK's log
    # handler may wrap the line).
    assert [json.loads(r.content[0].text)["documents"] for r in old] == [3, 3]
    flat = " ".join(log.read_text(encoding="utf-8").split())
    assert flat.count("deprecated") == 1 and "tool index_info is" in flat and "call info" in flat


def test_stdio_select_sends_the_context_once_and_a_repeat_adds_no_filler(tmp_path):
    params = _params(build_demo(tmp_path))

    async def session():
        with open(os.devnull, "w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                args = {"query": DEMO_FIRST, "budget": 1500}
                return [await client.call_tool("select", args) for _ in range(3)]

    results = anyio.run(session)
    for result in results:
        [block] = result.content  # one text block: the rendered context, then references
        meta = result.structured_content
        assert block.text.startswith("~~~ ") or block.text.startswith("already provided: ")
        assert '"text"' not in json.dumps(meta)  # the texts travel once
        wire = block.text + json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
        assert meta["result_tokens"] == COUNT(wire)  # counts everything the client received
        assert meta["result_tokens"] <= 1.15 * meta["tokens_used"] + 100
        assert meta["stop"] and f"stop: {meta['stop']}" in block.text
    calls = [r.structured_content for r in results]
    assert calls[0]["pieces"] and not calls[0]["references"]
    # The identical question again: the chunks of the same selection come back as
    # references, and new material goes only where select itself would go with the budget
    # plus what the references cost, never past its stopping rule (docs/11-mcp.md). Once a
    # call was ended by the rule rather than by the budget, asking again adds no filler
    # (issue 10: at most 10% of the first call's tokens_used); a call ended by the budget
    # may be followed, once, by the chunks the rule still wanted. Nothing is sent twice.
    selection = {c for p in calls[0]["pieces"] for c in p["chunk_ids"]}
    sent = set(selection)
    for before, after, result in zip(calls, calls[1:], results[1:], strict=False):
        referenced = reference_ids(result.content[0].text)
        assert after["references"] == len(referenced) and set(referenced) == selection
        new_ids = {c for p in after["pieces"] for c in p["chunk_ids"]}
        assert not new_ids & sent
        sent |= new_ids
        new = sum(p["tokens"] for p in after["pieces"])
        if before["stop"] != "budget full":
            assert new <= 0.10 * calls[0]["tokens_used"], (before["stop"], new)
    assert any(c["stop"] != "budget full" for c in calls[:2])  # it converges by the third

"""`ctxselect mcp` as a real subprocess, spoken to over stdio by the MCP SDK's own client."""

from __future__ import annotations

import os
import sys

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from test_sessions_helpers import FIRST, SECOND, build


def test_stdio_session_lists_tools_and_dedups_a_repeat(tmp_path):
    _, folder = build(tmp_path)
    # The SDK gives the child a minimal environment; keep the import path the tests use.
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ctxselect", "mcp", "--index", folder], env=env
    )
    log = tmp_path / "stderr.txt"

    async def session():
        with log.open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = [t.name for t in (await client.list_tools()).tools]
                first = await client.call_tool("select_context", {"query": FIRST, "budget": 300})
                second = await client.call_tool("select_context", {"query": SECOND, "budget": 300})
                typo = await client.call_tool("select_context", {"query": FIRST, "bugdet": 300})
                write = await client.call_tool("reindex", {})
        refused = [r.content[0].text for r in (typo, write) if r.is_error]
        return tools, first.structured_content, second.structured_content, refused

    tools, first, second, refused = anyio.run(session)
    assert len(refused) == 2 and "unknown argument 'bugdet' (did you mean 'budget'?)" in refused[0]
    assert "`ctxselect mcp --allow-write`" in refused[1]
    assert {"select_context", "search", "get_chunk", "get_document"} <= set(tools)
    sent = {c for piece in first["pieces"] for c in piece["chunk_ids"]}
    assert first["references"] == [] and sent
    assert second["references"], "the overlapping question should reuse chunks by reference"
    assert {r["chunk_id"] for r in second["references"]} <= sent
    assert second["tokens_saved"] > 0
    assert not {c for piece in second["pieces"] for c in piece["chunk_ids"]} & sent
    assert second["session_tokens"] == first["result_tokens"] + second["result_tokens"]
    # stdout carried only protocol messages; the banner went to stderr.
    assert log.read_text(encoding="utf-8").startswith("ctxselect mcp: serving ")

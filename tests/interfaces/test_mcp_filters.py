"""include, exclude and where on the MCP search and select tools, in process."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from _support.filter_corpus import QUERY, build
from ctxselect import api
from ctxselect.interfaces.mcp_server import build_server


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("mcp-filters"))


def run(folder, scenario):
    async def main():
        async with Client(build_server(api.open_index(folder))) as client:
            return await scenario(client)

    return anyio.run(main)


async def call(client, tool, **arguments):
    """The error text, or the structured result with the text block under ``_text``."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        return result.content[0].text
    return result.structured_content | {"_text": result.content[0].text}


def test_the_tools_take_the_cli_filter_names(folder):
    async def scenario(client):
        return {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}

    props = run(folder, scenario)
    for tool in ("search", "select"):
        assert {"include", "exclude", "where"} <= set(props[tool])
        assert props[tool]["include"]["type"] == "array"
        assert props[tool]["where"]["maxItems"] == 50


def test_search_and_select_rank_only_what_the_filter_keeps(folder):
    async def scenario(client):
        plain = await call(client, "search", query=QUERY, k=10)
        kept = await call(client, "search", query=QUERY, k=10, include=["howto/"],
                          where=["status=published"])  # fmt: skip
        chosen = await call(client, "select", query=QUERY, budget=400, exclude=["releases/"],
                            where=["kind=markdown"], stop="none")  # fmt: skip
        return plain, kept, chosen

    plain, kept, chosen = run(folder, scenario)
    assert not any(h["doc_id"].startswith("howto/") for h in plain["hits"])
    assert len(kept["hits"]) == 8 and kept["note"] == ""
    assert all(h["doc_id"].startswith("howto/") for h in kept["hits"])
    with api.open_index(folder) as idx:
        expected = idx.search(QUERY, 10, include=["howto/"], where=["status=published"])
    assert [h["chunk_id"] for h in kept["hits"]] == [h.chunk_id for h in expected]
    chunk_ids = [c for p in chosen["pieces"] for c in p["chunk_ids"]]
    assert chunk_ids and all(c.startswith("howto/") for c in chunk_ids)


def test_an_empty_result_names_the_filter_and_bad_input_is_a_tool_error(folder):
    async def scenario(client):
        return (
            await call(client, "search", query=QUERY, exclude=["*"]),
            await call(client, "select", query=QUERY, budget=400, where=["kind=pdf"]),
            await call(client, "search", query=QUERY, include=["[x"]),
            await call(client, "select", query=QUERY, where=["kind"]),
        )

    none, empty, glob, where = run(folder, scenario)
    assert none["hits"] == [] and none["note"] == "exclude '*' leaves none of the 75 documents"
    assert empty["pieces"] == []
    assert "where kind=pdf matches none of the 75 documents" in empty["_text"]  # the summary
    assert "invalid include glob '[x' at position 0" in glob
    assert "where condition 'kind' has no '='" in where

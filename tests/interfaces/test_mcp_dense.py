"""MCP select with mmr and promote; search in dense and hybrid modes."""

from __future__ import annotations

import pytest
from test_mcp_server import call
from test_mcp_server import run as run_server

from _support.mcp_refs import reference_ids
from _support.sessions_corpus import WEATHER, write_guide
from ctxselect import api
from ctxselect.config import ChunkSpec
from ctxselect.interfaces.mcp_server import build_server
from ctxselect.tokens import get_counter

COUNT = get_counter("cl100k").count
SECTION = ["guide.md#1", "guide.md#2", "guide.md#3"]


@pytest.fixture
def folder(tmp_path):
    corpus = write_guide(tmp_path / "corpus")
    api.index_paths([corpus], tmp_path / "ix", chunk=ChunkSpec(chunker="markdown", size=40),
                    embedder="hash")  # fmt: skip
    return tmp_path / "ix"


def run(folder, scenario):
    return run_server(build_server(api.open_index(folder)), scenario)


def test_schema_has_mmr_and_promote(folder):
    async def scenario(client):
        return {t.name: t for t in (await client.list_tools()).tools}

    props = run(folder, scenario)["select"].input_schema["properties"]
    assert props["mmr"].items() >= {"minimum": 0, "maximum": 1, "default": None}.items()
    assert props["promote"]["type"] == "boolean" and props["promote"]["default"] is False
    assert props["mmr"]["description"] and props["promote"]["description"]
    assert "dense" in props["mode"]["description"] and "hybrid" in props["mode"]["description"]


def test_select_with_mmr_and_promote_and_session_accounting(folder):
    async def scenario(client):
        first = await call(client, "select", query="alpha cache entries", budget=300,
                           mmr=0.5, promote=True, stop="none")  # fmt: skip
        second = await call(client, "select", query="weather report clouds rain",
                            budget=300, stop="none")  # fmt: skip
        return first, second

    first, second = run(folder, scenario)
    [section] = [p for p in first["pieces"] if p["chunk_ids"][0].startswith("guide.md#")]
    assert section["chunk_ids"] == SECTION and WEATHER.strip() in first["_text"]
    assert first["tokens_used"] <= 300
    assert first["result_tokens"] == COUNT(first["_wire"])
    # guide.md#2 was sent inside the section: it comes back as a reference now.
    assert second["references"] == 1 and reference_ids(second["_text"]) == ["guide.md#2"]
    assert "guide.md#2" not in {c for p in second["pieces"] for c in p["chunk_ids"]}
    assert second["tokens_saved"] > 0
    assert second["session_tokens"] == first["result_tokens"] + second["result_tokens"]


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_search_and_select_in_dense_modes(folder, mode):
    async def scenario(client):
        return (
            await call(client, "search", query="alpha cache", k=3, mode=mode),
            await call(client, "select", query="alpha cache", budget=200, mode=mode),
        )

    search, select = run(folder, scenario)
    with api.open_index(folder) as idx:
        expected = [h.chunk_id for h in idx.search("alpha cache", 3, mode)]
    assert search["mode"] == mode and [h["chunk_id"] for h in search["hits"]] == expected
    # search sent the best chunks: they come back as references, and no filler with them
    referenced = reference_ids(select["_text"])
    assert set(referenced) <= {h["chunk_id"] for h in search["hits"]}
    assert select["references"] == len(referenced) > 0 and select["tokens_used"] <= 200


def test_bad_mmr_and_missing_vectors_are_tool_errors(folder, tmp_path):
    async def scenario(client):
        return await call(client, "select", query="cache", mmr=1.5)

    assert "mmr must be a number from 0 to 1, got 1.5" in run(folder, scenario)
    corpus = write_guide(tmp_path / "kcorpus")
    api.index_paths([corpus], tmp_path / "kw")

    async def keyword(client):
        return (
            await call(client, "select", query="cache", mmr=0.5),
            await call(client, "search", query="cache", mode="dense"),
        )

    mmr, dense = run(tmp_path / "kw", keyword)
    assert "mmr compares the chunks' dense vectors" in mmr
    assert "needs dense vectors and this index has none: pass mode bm25" in dense
    assert "`ctxselect" not in mmr + dense  # tool arguments, not CLI commands

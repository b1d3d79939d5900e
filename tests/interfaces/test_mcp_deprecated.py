"""The 0.1 tool names: still answered through 0.2, never listed, logged once each."""

from __future__ import annotations

import logging

import pytest
from test_mcp_server import call as call_new
from test_mcp_server import library as library  # the library fixture
from test_mcp_server import run, server_for

from _support.mcp_refs import reference_ids
from _support.sessions_corpus import FIRST, build
from ctxselect.interfaces import mcp_wire
from ctxselect.interfaces.vocabulary import DEPRECATED_TOOLS

OLD_NAMES = ("select_context", "index_info", "select_examples", "add_documents", "reindex")


@pytest.fixture
def corpus_index(tmp_path):
    return build(tmp_path)


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(mcp_wire, "_warned", set())


async def call(client, name, **arguments):
    """test_mcp_server's call, which checks a select result's shape by the tool's name."""
    if name != "select_context":
        return await call_new(client, name, **arguments)
    result = await client.call_tool(name, arguments)
    if result.is_error:
        return result.content[0].text
    [block] = result.content
    return result.structured_content | {"_text": block.text}


def _deprecations(caplog):
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == mcp_wire.__name__ and "deprecated" in r.getMessage()
    ]


def test_every_0_1_name_maps_to_a_tool_of_today():
    assert set(DEPRECATED_TOOLS) == set(OLD_NAMES)
    assert set(DEPRECATED_TOOLS.values()) == {"select", "info", "examples", "add", "index"}


def test_old_names_are_not_listed_and_unknown_tools_name_only_new_ones(corpus_index, library):
    server = server_for(corpus_index[1], library=library, allow_write=True)

    async def scenario(client):
        tools = [t.name for t in (await client.list_tools()).tools]
        return tools, await call(client, "nosuch")

    tools, unknown = run(server, scenario)
    assert tools == ["select", "search", "get_chunk", "get_document", "explain", "info",
                     "grep", "examples", "add", "index"]  # fmt: skip
    assert not set(tools) & set(OLD_NAMES)
    assert unknown == (
        "unknown tool 'nosuch': the tools here are select, search, get_chunk, get_document, "
        "explain, info, grep, examples, add, index"
    )


def test_old_read_names_run_the_new_tools_and_log_once_per_name(corpus_index, library, caplog):
    server = server_for(corpus_index[1], library=library)

    async def scenario(client):
        old = [await call(client, name, **args) for name, args in [
            ("select_context", {"query": FIRST, "budget": 300}),
            ("select_context", {"query": FIRST, "budget": 300}),
            ("index_info", {}),
            ("select_examples", {"input": "how large a cache?", "budget": 60, "k": 2}),
        ]]  # fmt: skip
        new = [
            await call(client, "info"),
            await call(client, "examples", input="how large a cache?", budget=60, k=2),
        ]
        return old, new

    with caplog.at_level(logging.WARNING, logger=mcp_wire.__name__):
        (first, again, info, examples), (new_info, new_examples) = run(server, scenario)
    assert first["pieces"] and first["references"] == 0 and first["call"] == 1
    assert (
        again["references"] == len(reference_ids(again["_text"])) > 0 and again["call"] == 2
    )  # one session across old and new names
    assert "~~~" in first["_text"] and "text" not in first  # select's text block + metadata
    drop = ("call", "session_tokens", "_text", "_wire")
    assert {k: v for k, v in info.items() if k not in drop} == {
        k: v for k, v in new_info.items() if k not in drop
    }
    assert examples["examples"] == new_examples["examples"]
    assert _deprecations(caplog) == [
        "ctxselect mcp: tool select_context is deprecated (answered through ctxselect 0.2): "
        "call select, same arguments",
        "ctxselect mcp: tool index_info is deprecated (answered through ctxselect 0.2): "
        "call info, same arguments",
        "ctxselect mcp: tool select_examples is deprecated (answered through ctxselect 0.2): "
        "call examples, same arguments",
    ]


def test_old_write_names_need_allow_write_and_then_write(corpus_index, caplog):
    corpus, folder = corpus_index
    (corpus / "quota.md").write_text("# Quota\n\nThe quota resets every hour.\n")

    async def scenario(client):
        return (
            await call(client, "add_documents", paths=["quota.md"]),
            await call(client, "reindex"),
            await call(client, "select_context", query="cache", bugdet=500),
        )

    add, index, typo = run(server_for(folder), scenario)
    assert add.startswith(
        "add_documents is now called add; add is a write tool and this server is read-only: "
        "add and index exist when the server is started with `ctxselect mcp --allow-write`"
    )
    assert index.startswith("reindex is now called index; index is a write tool")
    assert typo.endswith("unknown argument 'bugdet' (did you mean 'budget'?): select takes "
                         "query, budget, mode, detail, refresh, mmr, promote, stop, include, "
                         "exclude, where")  # fmt: skip
    added, again, _ = run(server_for(folder, allow_write=True), scenario)
    assert added["doc_ids"] == ["quota.md"] and added["documents"] == 4
    assert again["report"]["rebuilt"] is False

"""Tool arguments of the wrong JSON type are refused with one plain message (what, why,
how to fix), never a validation dump, and never coerced (``"500"``, ``"yes"``, ``true``)."""

from __future__ import annotations

import pytest
from test_mcp_server import call, run, server_for

from _support.sessions_corpus import FIRST, build


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("arguments"))[1]


PREFIX = "Error executing tool {tool}: "


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("select", {"budget": "abc"}, 'budget must be a whole number, got "abc": pass'),
        ("select", {"budget": "500"}, 'budget must be a whole number, got "500": pass'),
        ("select", {"budget": True}, "budget must be a whole number, got true: pass"),
        ("select", {"budget": 500.5}, "budget must be a whole number, got 500.5: pass"),
        ("select", {"refresh": "yes"}, 'refresh must be true or false, got "yes": pass'),
        ("select", {"include": "docs/"}, 'include must be a list of strings, got "docs/": pass'),
        ("select", {"include": [1]}, "include must be a list of strings, got [1]: pass"),
        ("select", {"stop": None}, "stop must be a string or a number, got null: pass"),
        ("select", {"mmr": "0.5"}, 'mmr must be a number or null, got "0.5": pass'),
        ("search", {"k": "3"}, 'k must be a whole number, got "3": pass'),
        ("grep", {"fixed": 1}, "fixed must be true or false, got 1: pass"),
        ("get_document", {"doc_id": 7}, "doc_id must be a string, got 7: pass"),
    ],
)
def test_a_wrong_type_is_one_plain_error(folder, tool, arguments, message):
    base = {
        "select": {"query": FIRST},
        "search": {"query": FIRST},
        "grep": {"pattern": "cache"},
        "get_document": {"doc_id": "cache.md"},
    }[tool]

    async def scenario(client):
        return await call(client, tool, **(base | arguments))

    text = run(server_for(folder), scenario)
    assert isinstance(text, str), "the call ran instead of being refused"
    assert text.startswith(PREFIX.format(tool=tool) + message), text
    assert "validation error" not in text and "pydantic" not in text
    assert "\n" not in text  # one line, as the CLI prints it


def test_right_types_still_run(folder):
    async def scenario(client):
        return await call(
            client,
            "select",
            query=FIRST,
            budget=500.0,
            refresh=False,
            include=["cache.md"],
            stop="none",
            mmr=None,
        )  # fmt: skip  (500.0: JSON has one number type; a whole one is a whole number)

    result = run(server_for(folder), scenario)
    assert isinstance(result, dict) and result["tokens_used"] <= 500 and result["pieces"]


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("select", {}, 'missing required argument query (a string): pass query, such as {"query"'),
        ("get_chunk", {}, "missing required argument chunk_id (a string): pass chunk_id"),
        ("explain", {"mode": "bm25"}, "missing required arguments query (a string), chunk_id"),
        ("grep", {"fixed": True}, "missing required argument pattern (a string): pass pattern"),
        ("get_document", {"start": 3}, "missing required argument doc_id (a string): pass"),
    ],
)
def test_a_missing_argument_is_one_plain_error(folder, tool, arguments, message):
    async def scenario(client):
        return await call(client, tool, **arguments)

    text = run(server_for(folder), scenario)
    assert isinstance(text, str), "the call ran without its required argument"
    assert text.startswith(PREFIX.format(tool=tool) + message), text
    assert "validation error" not in text and "\n" not in text


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        # a number too large for pydantic's int parser: the tool's own bound names the limit
        ("select", {"query": FIRST, "budget": 1e30}, "above the result cap of 20000 tokens"),
        ("grep", {"pattern": "cache", "budget": 1e30}, "above the result cap of 20000 tokens"),
        ("get_document", {"doc_id": "cache.md", "start": 1e20}, "start 100000000000000000000"),
        # the server's cap binds before the global maximum, so the advice is one that runs
        ("select", {"query": FIRST, "budget": 10**9}, "budget 1000000000 is above the result cap"),
    ],
)
def test_a_huge_number_is_refused_by_its_bound(folder, tool, arguments, message):
    async def scenario(client):
        return await call(client, tool, **arguments)

    text = run(server_for(folder), scenario)
    assert isinstance(text, str) and message in text, text
    assert "validation error" not in text and "100,000,000" not in text


def test_a_huge_whole_end_reads_to_the_end(folder):
    async def scenario(client):
        return await call(client, "get_document", doc_id="cache.md", end=1e20)

    result = run(server_for(folder), scenario)
    assert isinstance(result, dict), result
    assert result["end"] == result["doc_chars"] and not result["truncated"]

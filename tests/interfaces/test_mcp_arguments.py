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

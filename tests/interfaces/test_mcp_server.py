"""The MCP server in process: every tool's schema, results, errors, sessions, cap, safety."""

from __future__ import annotations

import json
import os
import re
from types import SimpleNamespace

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from _support.mcp_refs import reference_ids
from _support.sessions_corpus import FIRST, SECOND, build
from ctxselect import agent as sessions
from ctxselect import api
from ctxselect.agent.examples import ExampleLibrary
from ctxselect.errors import ConfigError
from ctxselect.interfaces.cli import agent, commands  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli
from ctxselect.interfaces.mcp_server import build_server, session_key
from ctxselect.tokens import get_counter

READ_TOOLS = {"select", "search", "grep", "get_chunk", "get_document", "explain", "info"}
COUNT = get_counter("cl100k").count


@pytest.fixture
def corpus_index(tmp_path):
    return build(tmp_path)


@pytest.fixture
def library(tmp_path):
    path = tmp_path / "examples.jsonl"
    rows = [("How big should the cache be?", "A tenth of the memory."),
            ("How often are requests retried?", "Five times at most."),
            ("Where does the Linux service log?", "To the journal.")]  # fmt: skip
    path.write_text("".join(json.dumps({"input": i, "output": o}) + "\n" for i, o in rows))
    return ExampleLibrary.load(path)


def server_for(folder, **options):
    return build_server(api.open_index(folder), **options)


def run(server, scenario):
    """Connect one in-process client to ``server`` and run ``scenario(client)``."""

    async def main():
        async with Client(server) as client:
            return await scenario(client)

    return anyio.run(main)


def wire(text, structured):
    """What the client receives: the text block, then structured content as compact JSON."""
    return text + json.dumps(structured, separators=(",", ":"), ensure_ascii=False)


async def call(client, name, **arguments):
    result = await client.call_tool(name, arguments)
    if result.is_error:
        return result.content[0].text
    text = result.content[0].text
    data = result.structured_content
    if name == "select":  # rendered context as text, metadata without the text
        assert len(result.content) == 1 and '"text"' not in json.dumps(data)
        return data | {"_text": text, "_wire": wire(text, data)}
    assert json.loads(text) == data  # text block = structured output
    return data | {"_text": text, "_wire": text}


def test_tools_and_their_schemas(corpus_index, library):
    async def scenario(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run(server_for(corpus_index[1], max_result_tokens=5000), scenario)}
    assert set(tools) == READ_TOOLS
    select = tools["select"].input_schema["properties"]
    assert select["budget"].items() >= {"minimum": 100, "maximum": 5000, "default": 2000}.items()
    assert select["query"]["maxLength"] == sessions.MAX_QUERY_CHARS
    assert select["detail"]["enum"] == ["snippets", "full", "ids"]
    assert (
        tools["search"].input_schema["properties"]["k"].items()
        >= {"minimum": 1, "maximum": 50}.items()
    )
    for tool in tools.values():
        assert tool.description and tool.annotations.read_only_hint is True
        assert all(p.get("description") for p in tool.input_schema["properties"].values())
        assert tool.output_schema["type"] == "object"
    out = tools["select"].output_schema["properties"]
    assert {"tokens_used", "tokens_saved", "session_tokens", "result_tokens"} <= set(out)
    assert {"pieces", "references", "dropped_total", "stop"} <= set(out)
    full = server_for(corpus_index[1], library=library, allow_write=True)
    names = {t.name: t for t in run(full, scenario)}
    assert set(names) == READ_TOOLS | {"examples", "add", "index"}
    assert names["add"].annotations.read_only_hint is False


def test_select_twice_sends_references_the_second_time(corpus_index):
    async def scenario(client):
        first = await call(client, "select", query=FIRST, budget=300, stop="none")
        second = await call(client, "select", query=SECOND, budget=300, stop="none")
        return first, second

    first, second = run(server_for(corpus_index[1]), scenario)
    sent_first = {c for p in first["pieces"] for c in p["chunk_ids"]}
    assert first["references"] == 0 and first["pieces"]
    referenced = reference_ids(second["_text"])
    assert second["references"] == len(referenced) > 0 and set(referenced) <= sent_first
    assert second["tokens_saved"] > 0
    assert not {c for p in second["pieces"] for c in p["chunk_ids"]} & sent_first
    for result in (first, second):
        assert result["result_tokens"] == COUNT(result["_wire"])  # what the client got
        assert result["tokens_used"] <= 300
    assert second["session_tokens"] == first["result_tokens"] + second["result_tokens"]


def test_each_connection_is_its_own_session(corpus_index):
    server = server_for(corpus_index[1])

    async def scenario(client):
        return await call(client, "select", query=FIRST, budget=300)

    assert run(server, scenario)["references"] == 0
    assert run(server, scenario)["references"] == 0  # a new connection starts afresh


def test_refresh_and_ids(corpus_index):
    async def scenario(client):
        plan = await call(client, "select", query=FIRST, budget=300, detail="ids")
        sent = await call(client, "select", query=FIRST, budget=300)
        again = await call(client, "select", query=FIRST, budget=300, refresh=True)
        return plan, sent, again

    plan, sent, again = run(server_for(corpus_index[1]), scenario)
    assert "~~~" not in plan["_text"] and "~~~" in sent["_text"] and sent["references"] == 0
    for piece in plan["pieces"]:
        assert f"{' '.join(piece['chunk_ids'])}: " in plan["_text"]
    assert again["references"] == 0 and again["pieces"] == sent["pieces"]
    assert reference_ids(again["_text"]) == []


def test_read_tools_results(corpus_index):
    async def scenario(client):
        return (
            await call(client, "search", query="cache eviction", k=2),
            await call(client, "get_chunk", chunk_id="cache.md#0"),
            await call(client, "get_document", doc_id="retry.md", start=10, end=60),
            await call(client, "explain", query="cache eviction", chunk_id="cache.md#0"),
            await call(client, "info"),
        )

    search, chunk, span, explanation, info = run(server_for(corpus_index[1]), scenario)
    assert [h["rank"] for h in search["hits"]] == [1, 2] and search["hits"][0]["text"]
    assert chunk["chunk_ids"] == ["cache.md#0"] and chunk["text"].startswith("# Cache")
    assert (span["start"], span["end"], len(span["text"])) == (10, 60, 50)
    total = sum(t["contribution"] for t in explanation["terms"])
    assert total == pytest.approx(explanation["score"], rel=1e-6)
    assert info["documents"] == 3 and "bm25" in info["modes"]


def _cli_error(folder, *args):
    """The CLI's message for a bad value: a failed check (exit 1, ``error: ...``) or, for an
    option click checks, a usage error (exit 2, ``Error: Invalid value for '--x': ...``)."""
    result = CliRunner().invoke(cli, [*args, "--index", folder])
    assert result.exit_code in (1, 2)
    last = result.stderr.strip().splitlines()[-1]
    return re.sub(r"^(error: |Error: Invalid value for '[-\w]+': )", "", last)


def test_errors_name_tools_and_share_the_cli_checks(corpus_index):
    folder = corpus_index[1]

    async def scenario(client):
        return (
            await call(client, "explain", query="cache", chunk_id="nope#0"),
            await call(client, "search", query="cache", mode="nope"),
            await call(client, "select", query="cache", budget=5),
            await call(client, "select", query="x" * 2001),
            await call(client, "get_chunk", chunk_id="nope#1"),
            await call(client, "get_document", doc_id="../etc/passwd"),
            await call(client, "get_document", doc_id="nope.md"),
            await call(client, "select", query="cache", mode="dense"),
            await call(client, "search", query="cache", mode="hybrid"),
            await call(client, "select", query="cache", mmr=0.5),
        )

    explain, mode, budget, long_query, chunk, escape, doc, *dense = run(
        server_for(folder), scenario
    )
    assert explain.startswith("Error executing tool explain: ")
    assert mode.endswith(_cli_error(folder, "search", "cache", "--mode", "nope"))
    cli_budget = CliRunner().invoke(cli, ["select", "cache", "--budget", "5", "--index", folder])
    assert cli_budget.exit_code == 2 and budget.split(": ", 1)[1] in cli_budget.stderr
    for text, check in [(budget, lambda: sessions.check_budget(5, 20_000)),
                        (long_query, lambda: sessions.check_query("x" * 2001))]:  # fmt: skip
        with pytest.raises(ConfigError) as facade:
            check()
        assert text.endswith(str(facade.value))
    assert "no chunk 'nope#1'" in chunk and "'../etc/passwd' is refused" in escape
    assert "search and select results" in explain and "no chunk 'nope#0'" in explain
    assert "no document 'nope.md'" in doc and "select results" in doc
    assert all("needs dense vectors" in text for text in dense[:2]) and "mmr" in dense[2]
    for text in (explain, chunk, escape, doc, *dense):  # tool words, no CLI commands
        assert "`ctxselect" not in text and "--" not in text, text


def test_stop_reason_and_bad_stop_values(corpus_index):
    async def scenario(client):
        return (
            await call(client, "select", query=FIRST, budget=1000),
            await call(client, "select", query=FIRST, budget=1000, stop="none"),
            await call(client, "select", query="cache", stop="maybe"),
            await call(client, "select", query="cache", stop=1.5),
            await call(client, "select", query="cache", stop=0.3),
        )

    auto, filled, name, number, uncalibrated = run(server_for(corpus_index[1]), scenario)
    assert auto["stop"] == "score gap (uncalibrated)" and "stop: score gap" in auto["_text"]
    assert filled["references"] and not auto["references"]  # filled repeats what auto sent
    for text in (name, number):
        assert text.startswith("Error executing tool select: ")
        assert "auto, none or a P(relevant) threshold from 0 to 1" in text
    assert "this index has no P(relevant) for mode 'bm25': pass stop auto or none" in uncalibrated
    assert "`ctxselect" not in uncalibrated and "--" not in uncalibrated  # tool words


def test_unknown_arguments_are_refused_naming_the_valid_ones(corpus_index):
    async def scenario(client):
        return (
            await call(client, "select", query="cache", bugdet=500),
            await call(client, "search", query="cache", top_k=3, n=2),
            await call(client, "info", verbose=True),
        )

    typo, two, none = run(server_for(corpus_index[1]), scenario)
    assert typo == (
        "Error executing tool select: unknown argument 'bugdet' (did you mean "
        "'budget'?): select takes query, budget, mode, detail, refresh, mmr, promote, stop, "
        "include, exclude, where"
    )
    assert "unknown arguments 'top_k', 'n'" in two and "search takes query, k, mode" in two
    assert none.endswith("unknown argument 'verbose': info takes no arguments")


def test_write_tools_of_a_read_only_server_name_the_flag(corpus_index):
    corpus, folder = corpus_index
    (corpus / "quota.md").write_text("# Quota\n\nThe quota resets every hour.\n")
    before = api.open_index(folder).info()

    async def scenario(client):
        return (
            await client.call_tool("add", {"paths": ["quota.md"]}),
            await client.call_tool("index", {}),
            await client.call_tool("nosuch", {}),
        )

    add, index, nosuch = run(server_for(folder), scenario)
    assert add.is_error and index.is_error and nosuch.is_error
    for result, name in [(add, "add"), (index, "index")]:
        text = result.content[0].text
        assert text.startswith(f"{name} is a write tool and this server is read-only")
        assert "`ctxselect mcp --allow-write`" in text
        tools = "select, search, get_chunk, get_document, explain, info, grep"
        assert text.endswith(f"the tools here are {tools}")
    assert nosuch.content[0].text.startswith("unknown tool 'nosuch': the tools here are")
    after = api.open_index(folder).info()  # nothing was written: quota.md is not indexed
    assert (after.documents, after.generation) == (before.documents, before.generation)
    assert before.documents == 3


def test_cli_and_mcp_share_the_defaults(corpus_index):
    async def scenario(client):
        return {t.name: t for t in (await client.list_tools()).tools}

    tools = run(server_for(corpus_index[1]), scenario)
    select = {p.name: p for p in commands.select.params}
    search = {p.name: p for p in commands.search.params}
    budget = tools["select"].input_schema["properties"]["budget"]
    k = tools["search"].input_schema["properties"]["k"]
    assert budget["default"] == select["budget"].default == sessions.DEFAULT_BUDGET
    assert k["default"] == search["k"].default == sessions.DEFAULT_SEARCH_K
    assert budget["minimum"] == sessions.MIN_BUDGET and k["minimum"] == 1


def _many_notes(tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(40):
        text = f"# Note {i}\n\n" + f"The agent cache note {i} says the cache holds entries. " * 12
        (root / f"n{i:02d}.md").write_text(text, encoding="utf-8")
    (root / "long.md").write_text("# Long\n\n" + "cache word " * 8000, encoding="utf-8")
    api.index_paths([root], tmp_path / "mix")
    return tmp_path / "mix"


def test_no_result_exceeds_the_cap(tmp_path):
    server = server_for(_many_notes(tmp_path), max_result_tokens=1000)

    async def scenario(client):
        return (
            await call(client, "select", query="agent cache entries", budget=1000),
            await call(client, "search", query="cache note", k=50),
            await call(client, "get_document", doc_id="long.md"),
            await call(client, "select", query="cache", budget=1001),
        )

    select, search, document, over = run(server, scenario)
    for result in (select, search, document):
        assert COUNT(result["_wire"]) == result["result_tokens"] <= 1000
    assert document["truncated"] and document["next_start"] == document["end"]
    assert "above the result cap of 1000 tokens" in over


def test_examples_tool(corpus_index, library):
    server = server_for(corpus_index[1], library=library, max_result_tokens=2000)

    async def scenario(client):
        ok = await call(client, "examples", input="how large a cache?", budget=60, k=2)
        too_big = await call(client, "examples", input="cache", budget=2001)
        return ok, too_big

    ok, too_big = run(server, scenario)
    assert ok["examples"][-1]["input"] == "How big should the cache be?"
    assert ok["tokens_used"] <= 60 and "above the result cap of 2000 tokens" in too_big


def test_write_tools_exist_only_when_allowed(corpus_index):
    async def scenario(client):
        return await client.call_tool("index", {})

    result = run(server_for(corpus_index[1]), scenario)
    assert result.is_error and result.content[0].text.startswith("index is a write tool")


def test_add_and_index(corpus_index):
    corpus, folder = corpus_index
    (corpus / "quota.md").write_text("# Quota\n\nThe quota resets every hour.\n")

    async def scenario(client):
        added = await call(client, "add", paths=["quota.md"])
        found = await call(client, "search", query="quota resets", k=1)
        again = await call(client, "index")
        return added, found, again

    added, found, again = run(server_for(folder, allow_write=True), scenario)
    assert added["doc_ids"] == ["quota.md"] and added["documents"] == 4
    assert found["hits"][0]["doc_id"] == "quota.md"
    assert again["report"]["rebuilt"] is False


def test_paths_out_of_the_roots_are_refused(corpus_index, tmp_path):
    corpus, folder = corpus_index
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nhunter2\n")
    os.symlink(outside / "secret.md", corpus / "link.md")
    os.symlink(outside, corpus / "linked")

    async def scenario(client):
        return [
            await call(client, "add", paths=[path])
            for path in [
                "../outside/secret.md",
                str(outside / "secret.md"),
                "link.md",
                "linked/secret.md",
            ]
        ] + [await call(client, "index")]

    dotdot, absolute, link, linked_dir, index = run(server_for(folder, allow_write=True), scenario)
    assert "'..' may not appear in a path" in dotdot
    assert "is refused: give a path relative to the indexed root" in absolute
    assert "leads through a symlink to" in link and "leads through a symlink to" in linked_dir
    assert "outside them through symlinks" in index
    assert "secret" not in json.dumps(api.open_index(folder).table.doc_ids)


def test_session_key_per_transport():
    def ctx(request, session="abc"):
        rc = SimpleNamespace(request=request, lifespan_context={"session": session})
        return SimpleNamespace(request_context=rc)

    http = SimpleNamespace(headers={"mcp-session-id": "s1"})
    assert session_key(ctx(None)) == "abc"
    assert session_key(ctx(http)) == "http:s1"
    assert session_key(ctx(SimpleNamespace(headers={}))) is None

"""The Python API refuses what the CLI, the MCP tools and the adapters refuse, by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ctxselect as cs
from ctxselect.errors import ConfigError

TEXT = "# Packing\n\nThe greedy packer fills the budget.\n\nThe skip packer skips.\n"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> cs.Index:
    folder = tmp_path_factory.mktemp("docs")
    (folder / "pack.md").write_text(TEXT, encoding="utf-8")
    return cs.build_index([folder], tmp_path_factory.mktemp("ix") / "index")


BLANK: dict[str, Callable[[cs.Index, str], Any]] = {
    "search": lambda idx, q: idx.search(q),
    "rank": lambda idx, q: idx.rank(q, 5),
    "select": lambda idx, q: idx.select(q, 2000),
    "explain": lambda idx, q: idx.explain(q, "pack.md#0"),
    "explain_top": lambda idx, q: idx.explain_top(q),
}


@pytest.mark.parametrize("verb", sorted(BLANK))
@pytest.mark.parametrize("query", ["", "  ", "\n\t "])
def test_a_blank_query_is_refused_by_every_read_verb(
    index: cs.Index, verb: str, query: str
) -> None:
    with pytest.raises(ConfigError, match=r"^query is empty or whitespace only .*: pass the text"):
        BLANK[verb](index, query)
    assert [h.doc_id for h in index.search("greedy packer")] == ["pack.md"]  # index intact


def test_a_query_with_words_still_searches(index: cs.Index) -> None:
    assert index.search(" greedy ")[0].doc_id == "pack.md"
    assert index.select("greedy", 2000).tokens_used > 0


@pytest.mark.parametrize("max_bytes", ["5", 2.5, 0, -1, None, True])
def test_chunk_file_refuses_a_bad_max_bytes_with_the_cli_message(
    tmp_path: Path, max_bytes: object
) -> None:
    file = tmp_path / "a.md"
    file.write_text(TEXT, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^max bytes must be a whole number >= 1, got "):
        cs.chunk_file(file, max_bytes=max_bytes)  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", [{"size": 64}, "markdown", 64])
def test_chunk_file_refuses_a_spec_that_is_not_a_chunk_spec(tmp_path: Path, spec: object) -> None:
    file = tmp_path / "a.md"
    file.write_text(TEXT, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^spec must be a ChunkSpec, got .*: pass ChunkSpec"):
        cs.chunk_file(file, spec)  # type: ignore[arg-type]
    assert cs.chunk_file(file, cs.ChunkSpec(size=64))  # a real spec still chunks


def test_select_defaults_to_the_budget_of_the_cli_mcp_and_adapters(index: cs.Index) -> None:
    from ctxselect.agent import DEFAULT_BUDGET as AGENT_BUDGET
    from ctxselect.api.read import DEFAULT_BUDGET
    from ctxselect.interfaces.cli.commands import select

    cli_default = next(p.default for p in select.params if p.name == "budget")
    assert DEFAULT_BUDGET == AGENT_BUDGET == cli_default == 2000
    chosen = index.select("greedy packer")
    assert chosen.budget == DEFAULT_BUDGET
    assert chosen == index.select("greedy packer", DEFAULT_BUDGET)

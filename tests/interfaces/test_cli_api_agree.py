"""The CLI and the Python API give the same answer to the same request, with the same defaults.

One index of a real folder (chapters of docs/ and source files of the package) is asked
through ``ctxselect ... --json`` and through ``ctxselect.open_index``; the JSON must be
``dataclasses.asdict`` of the API's own return value, hit for hit and token for token.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ctxselect as cs
from ctxselect.agent.grep import grep_index
from ctxselect.api import names
from ctxselect.config import DEFAULT_K
from ctxselect.interfaces.cli.group import to_jsonable
from ctxselect.interfaces.cli.main import cli, register_commands

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["how does the budget packer stop", "chunk overlap tokenizer"]
CHAPTERS = ("03-chunking.md", "05-retrieval.md", "07-budget.md")
SOURCES = ("budget/packers.py", "budget/stop.py", "api/chunking.py")

register_commands()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus")
    (corpus / "docs").mkdir()
    (corpus / "src").mkdir()
    for name in CHAPTERS:
        shutil.copy(ROOT / "docs" / name, corpus / "docs" / name)
    for name in SOURCES:
        shutil.copy(ROOT / "src" / "ctxselect" / name, corpus / "src" / Path(name).name)
    return corpus


@pytest.fixture(scope="module")
def index(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("ix") / "index")
    cs.index_paths([folder], path)
    return path


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, ["--no-config", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(to_jsonable(value)))


def test_index_from_the_cli_equals_index_from_the_api(folder: Path, tmp_path: Path) -> None:
    by_cli = cli_json("index", str(folder), "--index", str(tmp_path / "a"))
    by_api = as_json(cs.index_paths([folder], tmp_path / "b"))
    for report in (by_cli, by_api):
        report.pop("seconds"), report.pop("index")
    assert by_cli == by_api
    info_cli = cli_json("info", "--index", str(tmp_path / "a"))
    info_api = as_json(cs.open_index(tmp_path / "b").info())
    assert info_cli["settings"] == info_api["settings"]
    assert info_cli["chunks"] == info_api["chunks"] == by_api["chunks"]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("k", [None, 3])
def test_search_and_explain_agree_with_the_api_defaults(index: str, query: str, k: int | None):
    idx = cs.open_index(index)
    depth = ["-k", str(k)] if k else []
    for mode in [None, *idx.modes()]:
        chosen = ["--mode", mode] if mode else []
        hits = idx.search(query, k or DEFAULT_K, mode)
        assert cli_json("search", query, "--index", index, *depth, *chosen) == as_json(hits)
        explained = idx.explain_top(query, k or 3, mode)
        assert cli_json("explain", query, "--index", index, *depth, *chosen) == as_json(explained)


@pytest.mark.parametrize("stop", ["auto", "none"])
@pytest.mark.parametrize("budget", [None, 100, 700])
def test_select_agrees_for_every_packer_stop_and_budget(index: str, stop: str, budget: int | None):
    idx = cs.open_index(index)
    given = ["--budget", str(budget)] if budget else []
    for query in QUERIES:
        for packer in names("packer"):
            args = ("select", query, "--index", index, "--stop", stop, "--packer", packer)
            selection = idx.select(query, budget or 2000, stop=stop, packer=packer)
            assert cli_json(*args, *given) == as_json(selection)


@pytest.mark.parametrize(
    "flag", [("--include", "*.py"), ("--exclude", "docs/"), ("--where", "kind=code")]
)
def test_filters_agree(index: str, flag: tuple[str, str]) -> None:
    idx = cs.open_index(index)
    filters = {flag[0][2:]: [flag[1]]}
    query = QUERIES[0]
    assert cli_json("search", query, "--index", index, *flag) == as_json(
        idx.search(query, **filters)
    )
    assert cli_json("select", query, "--index", index, *flag) == as_json(
        idx.select(query, 2000, **filters)
    )


def test_chunk_and_grep_agree(folder: Path, index: str) -> None:
    file = str(folder / "docs" / CHAPTERS[0])
    for chunker in [None, "paragraph", "tokens"]:
        flags = ["--chunker", chunker] if chunker else []
        spec = cs.ChunkSpec(chunker=chunker) if chunker else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert cli_json("chunk", file, *flags) == as_json(cs.chunk_file(file, spec))
    idx = cs.open_index(index)
    result = grep_index(idx, "budget", ignore_case=True, include=["*.py"], context=1)
    args = ("grep", "budget", "-i", "--include", "*.py", "-C", "1", "--index", index)
    assert cli_json(*args) == as_json(result)


@pytest.mark.parametrize("command", ["search", "select", "explain"])
@pytest.mark.parametrize("query", ["", "   \n\t"])
def test_a_blank_query_is_one_error_line_not_an_empty_answer(
    index: str, command: str, query: str
) -> None:
    before = cs.open_index(index).info().chunks
    result = CliRunner().invoke(cli, ["--no-config", command, query, "--index", index])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: query is empty or whitespace only")
    assert result.stderr.endswith("pass the text to look for\n")
    assert result.stderr.count("\n") == 1
    assert cs.open_index(index).info().chunks == before  # nothing stored was touched

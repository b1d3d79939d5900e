"""`ctxselect grep`: grep -n style text, --json = the API's value, one-line errors."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from _support.grep_corpus import build
from ctxselect import api
from ctxselect.agent.grep import grep_index
from ctxselect.interfaces.cli import grep as _grep  # noqa: F401  (registers the command)
from ctxselect.interfaces.cli.main import cli


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("cli-grep"))


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_text_output_is_grep_n_with_a_header_per_document(folder):
    result = invoke("grep", "parse_header", "--index", folder, "--include", "src/", "-C", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "src/app.py\n"
        "src/app.py-5-\n"
        "src/app.py:6: def parse_header(line):\n"
        'src/app.py-7-     """Split a header line."""\n'
        "\n"
        "src/util/helpers.py\n"
        "src/util/helpers.py:1: def parse_header_fast(line):\n"
        'src/util/helpers.py-2-     return line.split(":", 1)\n'
    )
    assert result.stderr.startswith("grep: 2 matching line(s) in 2 document(s) searched;")
    assert "stop: all matches" in result.stderr


def test_blocks_of_one_document_are_separated_by_dashes(folder):
    result = invoke("grep", "^needle 1[05]0$", "--index", folder, "-C", "0")
    assert (
        result.stdout
        == "docs/long.md\ndocs/long.md:100: needle 100\n--\ndocs/long.md:150: needle 150\n"
    )


def test_json_is_the_api_value(folder):
    args = ["PARSE_header", "-i", "--exclude", "releases/", "--context", "0", "--budget", "500"]
    result = invoke("grep", *args, "--index", folder, "--json")
    assert result.exit_code == 0, result.output
    with api.open_index(folder) as index:
        expected = grep_index(
            index, "PARSE_header", ignore_case=True, exclude=("releases/",), context=0, budget=500
        )
    assert json.loads(result.stdout) == json.loads(json.dumps(dataclasses.asdict(expected)))
    assert {b["doc_id"] for b in json.loads(result.stdout)["blocks"]} == {
        "docs/guide.md", "src/app.py", "src/util/helpers.py"
    }  # fmt: skip


def test_fixed_searches_literal_text(folder):
    literal = json.loads(invoke("grep", "a.b", "--fixed", "--index", folder, "--json").stdout)
    assert [m["line"] for b in literal["blocks"] for m in b["matches"]] == [4]


def test_budget_stop_and_left_out_are_reported_on_stderr(folder):
    result = invoke("grep", "needle", "--index", folder, "--budget", "100")
    assert result.exit_code == 0
    assert "left out" in result.stderr and "stop: budget full: the next block" in result.stderr
    assert result.stdout.startswith("docs/long.md\n")


def test_a_bad_regex_is_one_line_on_stderr(folder):
    result = invoke("grep", "parse_(x", "--index", folder)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: invalid regex 'parse_(x' at position 8: missing )")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--include", "src/[a"], "invalid include glob 'src/[a' at position 4"),
        (["--exclude", "a\\"], "invalid exclude glob 'a\\\\' at position 1"),
        (["--include", "src/[z-a].py"], "at position 5: the range z-a runs backwards"),
        (["--context", "99"], "'--context' / '-C': 99 is not in the range 0<=x<=20"),
    ],
)
def test_a_bad_glob_or_context_is_a_usage_error_as_in_search(folder, args, words):
    result = invoke("grep", "x", *args, "--index", folder)
    assert result.exit_code == 2 and result.stdout == ""  # as docs/cli.md says for every command
    assert words in result.stderr


def test_a_budget_below_the_minimum_is_a_usage_error(folder):
    assert invoke("grep", "x", "--budget", "5", "--index", folder).exit_code == 2


@pytest.mark.parametrize(
    ("args", "note"),
    [
        (["parse", "--include", "*.rs"], "include '*.rs' matches none of the 5 documents"),
        (["parse", "--exclude", "*"], "exclude '*' leaves none of the 5 documents"),
        (["zzz_nothing"], "no match for 'zzz_nothing' in 5 documents"),
    ],
)
def test_empty_results_say_why(folder, args, note):
    result = invoke("grep", *args, "--index", folder)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.rstrip().endswith(note)
    data = json.loads(invoke("grep", *args, "--index", folder, "--json").stdout)
    assert data["blocks"] == [] and data["note"] == note

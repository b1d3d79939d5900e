"""A grep pattern whose counted repeats would compile to gigabytes is refused first.

The ``regex`` module copies the body of a counted repeat ``{m}`` m times when it compiles
a pattern (about 270 bytes per copy): ``x{1000000}`` takes ~270 MB and ``x{1000000000}``
got the MCP server killed by the kernel's OOM killer. The sizes below stay small enough
to run before the fix (where they compile) without harm.
"""

from __future__ import annotations

import pytest

from _support.sessions_corpus import build
from ctxselect.agent import Sessions
from ctxselect.agent.grep_pattern import MAX_PATTERN_SIZE, pattern_size
from ctxselect.errors import ConfigError


@pytest.fixture
def service(tmp_path):
    opened = Sessions.open(build(tmp_path)[1])
    yield opened
    opened.close()


@pytest.mark.parametrize("pattern", ["x{1000000}", "(?:x{1000}){1000}", "(?=[a-z]{200000})"])
def test_a_pattern_that_compiles_too_large_is_refused_and_the_session_kept(service, pattern):
    first = service.grep("s", "cache", budget=300)
    with pytest.raises(ConfigError, match=r"repeats too much: .* above the limit of 100,000"):
        service.grep("s", pattern, budget=300)
    again = service.grep("s", "cache", budget=300)
    assert again.call == first.call + 1, "the refused call changed nothing in the session"
    assert again.references and not again.blocks


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("x{1000000000}", 1_000_000_000),
        ("(?:(?:x{1000}){1000}){1000}", 1_000_000_000),
        ("x{1000}" * 200, 200_000),
        (r"\p{L}{500000}", 500_000),
        ("[{]{200000}", 200_000),  # a brace inside a class is a literal; the count is not
    ],
)
def test_the_size_multiplies_nested_counts_and_adds_up_a_sequence(pattern, size):
    assert pattern_size(pattern) >= size > MAX_PATTERN_SIZE


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d{4}-\d{2}-\d{2}",
        "x{0,1000000}",  # only the lower bound is copied
        "(?:ab){1,}",
        r"\p{Greek}{3}",
        r"\N{SNOWMAN}{5}",
        r"\{99999999\}",  # escaped braces: no repeat
        "(?# {99999999} )cache",  # a comment
        "a{,5}",
    ],
)
def test_ordinary_patterns_are_not_refused(service, pattern):
    assert pattern_size(pattern) < 100
    service.grep("s", pattern, budget=300)


def test_fixed_text_is_never_a_pattern(service):
    result = service.grep("s", "x{1000000000}", fixed=True, budget=300)
    assert not result.blocks


def test_the_cli_refuses_it_too_in_one_line(tmp_path):
    from click.testing import CliRunner

    from ctxselect.interfaces.cli import grep as _grep  # noqa: F401  (registers the command)
    from ctxselect.interfaces.cli.main import cli

    folder = build(tmp_path)[1]
    result = CliRunner().invoke(cli, ["grep", "x{1000000}", "--index", folder])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: pattern 'x{1000000}' repeats too much")
    assert result.stderr.count("\n") == 1
    fixed = CliRunner().invoke(cli, ["grep", "x{1000000}", "--fixed", "--index", folder])
    assert fixed.exit_code == 0, fixed.output

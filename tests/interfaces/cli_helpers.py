"""Run the ``ctxselect`` command in-process: ``run`` expects success, ``fails`` an error."""

from __future__ import annotations

from click.testing import CliRunner, Result

from ctxselect.interfaces.cli import agent, commands, experiments, store, tune  # noqa: F401
from ctxselect.interfaces.cli.main import cli


def run(*args: str) -> Result:
    """Invoke ``ctxselect ARGS``; it must exit 0 (tracebacks propagate)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def fails(*args: str, code: int = 1) -> str:
    """Invoke ``ctxselect ARGS``; it must exit ``code`` (1: one ``error:`` line on stderr)."""
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    if code == 1:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    return result.stderr

"""`ctxselect mcp` start-up: a bad index or library fails before serving; --json lists tools."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from _support.sessions_corpus import build
from ctxselect.interfaces.cli import agent  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli


def _mcp(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["mcp", *args], env=env)


def test_missing_index_fails_before_serving(tmp_path):
    # stdin is a pipe the child never reads: had it started serving, it would block.
    result = subprocess.run(
        [sys.executable, "-m", "ctxselect", "mcp", "--index", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.PIPE,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: no index at {tmp_path / 'none'}")


def test_damaged_index_and_bad_library_fail_before_serving(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "index.sqlite").write_bytes(b"garbage" * 500)
    damaged = _mcp("--index", str(tmp_path / "bad"))
    assert damaged.exit_code == 1 and "is not a readable ctxselect index" in damaged.stderr
    _, folder = build(tmp_path)
    library = tmp_path / "lib.jsonl"
    library.write_text('{"input": "a", "output": "b"}\n{"input": "a"}\n', encoding="utf-8")
    for flag in ("--library", "--examples"):  # --examples: the 0.1 spelling
        bad = _mcp("--index", folder, flag, str(library))
        assert bad.exit_code == 1 and f"{library}:2: 'output' is missing" in bad.stderr
    tiny = _mcp("--index", folder, "--max-result-tokens", "10")
    assert tiny.exit_code == 1 and "at least 1000" in tiny.stderr


def test_json_lists_the_tools_with_the_cap_from_the_environment(tmp_path):
    _, folder = build(tmp_path)
    result = _mcp("--index", folder, "--allow-write", "--json",
                  env={"CTXSELECT_MCP_MAX_TOKENS": "4000"})  # fmt: skip
    tools = {t["name"]: t for t in json.loads(result.stdout)}
    assert {"select", "add", "index"} <= set(tools)
    assert tools["select"]["inputSchema"]["properties"]["budget"]["maximum"] == 4000
    assert tools["select"]["annotations"]["readOnlyHint"] is True


def test_http_sessions_expire_when_idle_and_the_stdio_session_never(tmp_path, monkeypatch):
    """An agent over stdio that pauses for hours still holds what it was sent, so its one
    session is never forgotten; over HTTP a client that went away never says so."""
    from ctxselect.agent.memory import IDLE_SECONDS
    from ctxselect.interfaces import mcp_server

    built: list[float | None] = []
    real = mcp_server.build_server

    def recording(*args, **kwargs):
        server = real(*args, **kwargs)
        built.append(kwargs["idle_seconds"])
        return server

    monkeypatch.setattr(mcp_server, "build_server", recording)
    monkeypatch.setattr(mcp_server, "serve", lambda server, **_: None)  # not served here
    _, folder = build(tmp_path)
    assert _mcp("--index", str(folder)).exit_code == 0
    assert _mcp("--index", str(folder), "--http").exit_code == 0
    assert built == [None, IDLE_SECONDS]

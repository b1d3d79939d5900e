"""`ctxselect mcp --http` as a real server on 127.0.0.1, spoken to by the MCP SDK's client.

The SDK's client (``mode="auto"``) probes ``server/discover`` first and, when the server
lists a 2026-07-28 version, speaks that stateless revision: no ``Mcp-Session-Id``, so no
session memory. Over HTTP the server lists only handshake-era versions, so the client
falls back to ``initialize`` and gets a session id.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from _support.sessions_corpus import FIRST, build

ARGS = {"query": FIRST, "budget": 300, "stop": "none"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(folder: str, log: Path) -> Iterator[str]:
    """Run `ctxselect mcp --http` on an ephemeral port; stop it on leaving."""
    port = _free_port()
    command = [sys.executable, "-m", "ctxselect", "mcp", "--index", folder, "--http"]
    with log.open("w", encoding="utf-8") as errlog:
        proc = subprocess.Popen(
            [*command, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=errlog
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(log.read_text(encoding="utf-8")) from None
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _two_selects(url: str, **options: object) -> tuple[dict, dict, str]:
    async with Client(streamable_http_client(url), **options) as client:
        first = await client.call_tool("select", ARGS)
        second = await client.call_tool("select", ARGS)
        version = client.protocol_version
    return first.structured_content, second.structured_content, version


def test_http_session_memory_with_the_sdk_client(tmp_path):
    _, folder = build(tmp_path)
    with http_server(folder, tmp_path / "stderr.txt") as url:

        async def sessions():
            one = await _two_selects(url)
            other = await _two_selects(url)
            pinned = await _two_selects(url, mode="2026-07-28")
            return one, other, pinned

        one, other, pinned = anyio.run(sessions)
    for first, second, version in (one, other):
        assert version in HANDSHAKE_PROTOCOL_VERSIONS
        assert first["references"] == 0 and first["call"] == 1
        assert second["references"] > 0 and second["tokens_saved"] > 0 and second["call"] == 2
        assert not second["pieces"], "a repeat sends no chunk twice"
    # The second client session starts empty: sessions do not share memory.
    assert other[0]["pieces"] == one[0]["pieces"]
    # A client pinned to the stateless revision sends no session id: no memory, as documented.
    first, second, version = pinned
    assert version == "2026-07-28"
    assert first["call"] == second["call"] == 1 and second["references"] == 0

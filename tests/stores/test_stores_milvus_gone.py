"""A Milvus server that is gone: reads of an open index, and a server that cannot start.

Every read of an index whose server stopped answering is the store's one-line
``StoreUnreachableError`` naming the index URI (so its HOST:PORT), never the client's
traceback: the reads of a snapshot made before (chunks read per hit, arrays read on
first use) as much as the store's own. ``python -m ctxselect.stores.milvus.server``
that cannot start its server prints one ``error:`` line and exits 1.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ctxselect as cs
from _support.milvus_reads import lazy_reads
from ctxselect.errors import StoreUnreachableError
from ctxselect.ingest import content_hash
from ctxselect.interfaces.cli import commands  # noqa: F401 - registers the commands
from ctxselect.interfaces.cli.main import cli
from ctxselect.stores import open_store
from ctxselect.stores.milvus import snapshots
from ctxselect.stores.milvus.lazy import MilvusLazyRows
from ctxselect.stores.milvus.server import MilvusServer
from ctxselect.stores.milvus.serving import SERVE_ENV
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=24, tokenizer="chars4")
TEXTS = {
    "cache.md": "The cache evicts old entries.\n\nEviction runs when memory runs low.",
    "retry.md": "Failed requests are retried.\n\nBackoff grows with every retry.",
}


def _docs() -> list[Document]:
    return [Document(d, t, source=d, content_hash=content_hash("", t)) for d, t in TEXTS.items()]


def _one_line(exc: BaseException, uri: str) -> None:
    text = str(exc)
    assert "\n" not in text and f"index {uri} " in text, text
    assert "cannot reach the Milvus server" in text and "start it" in text, text


def test_every_read_of_an_open_index_says_its_server_is_gone(tmp_path: Path) -> None:
    server = MilvusServer(tmp_path / "srv").start()
    uri = f"{server.uri}/gone"
    try:
        cs.add_documents(_docs(), uri, chunk=SPEC, embedder="hash")
        store = open_store(uri)
        snap = store.snapshot(eager=False)  # rows and arrays read later, per use
    finally:
        server.stop()
    rows = snap.rows
    assert isinstance(rows, MilvusLazyRows)
    arrays = next(seg.base for seg in snap.segments.values())
    reads: dict[str, Callable[[], Any]] = {
        **lazy_reads(rows, arrays),
        "read_group": lambda: store.read_group(f"base/{snap.manifest['base']['gen']}"),
        "read_json": lambda: store.read_json("anything"),
        "data_version": store.data_version,
        "served_modes": lambda: store.served_modes(snap),
        "searcher": lambda: store.searcher("bm25", snap, None),
    }
    raised: dict[str, str] = {}
    try:
        for name, read in reads.items():
            try:
                read()
            except StoreUnreachableError as exc:
                _one_line(exc, uri)
                raised[name] = "StoreUnreachableError"
            except Exception as exc:  # named in the assertion below: every read that leaks
                raised[name] = type(exc).__name__
    finally:
        store.close()
    assert raised == dict.fromkeys(reads, "StoreUnreachableError")
    with pytest.raises(StoreUnreachableError) as gone:  # not "damaged": nothing was judged
        cs.verify_index(uri)
    _one_line(gone.value, uri)


def test_a_server_gone_during_a_search_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = MilvusServer(tmp_path / "srv").start()
    uri = f"{server.uri}/mid_search"
    monkeypatch.setattr(snapshots, "TEXTS_IN_MEMORY_MAX", 1)  # hits read their chunk
    monkeypatch.setenv(SERVE_ENV, "none")  # ranked here: the hits come from the rows
    original = MilvusLazyRows.chunk

    def killed_first(self: MilvusLazyRows, row: int) -> Any:
        if server.process is not None:
            server.process.kill()  # after the snapshot was read, before the hit's chunk
            server.process.wait()
        return original(self, row)

    monkeypatch.setattr(MilvusLazyRows, "chunk", killed_first)
    try:
        cs.add_documents(_docs(), uri, chunk=SPEC)
        result = CliRunner().invoke(cli, ["search", "cache eviction", "--index", uri])
    finally:
        server.stop()
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert f"index {uri} " in result.stderr and "cannot reach the Milvus server" in result.stderr


# -- the server module, when its server cannot start ---------------------------------------


def _module(*args: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m ctxselect.stores.milvus.server ARGS`` (or ``-c CODE`` that runs it)."""
    how = ["-c", code] if code else ["-m", "ctxselect.stores.milvus.server"]
    return subprocess.run(
        [sys.executable, *how, *args], capture_output=True, text=True, timeout=120
    )


def _error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: "), line
    return line


def test_a_taken_port_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        line = _error_line(_module(str(tmp_path / "srv"), "--port", str(port)))
    assert f"127.0.0.1:{port}" in line and "another process listens" in line
    assert "pick another port" in line


def test_a_server_that_exits_while_starting_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "srv" / "milvus.db").mkdir(parents=True)  # a folder where its file goes
    line = _error_line(_module(str(tmp_path / "srv")))
    assert "exited with code" in line and "unable to open database file" in line
    assert str(tmp_path / "srv" / "server.log") in line


def test_a_data_folder_that_is_a_file_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    line = _error_line(_module(str(tmp_path / "file")))
    assert f"cannot use {tmp_path / 'file'} as the data folder" in line and "it is a file" in line


def test_a_missing_server_binary_is_one_error_line(tmp_path: Path) -> None:
    hidden = (  # as if milvus-lite were not installed
        "import sys; sys.modules['milvus_lite'] = None\n"
        "from ctxselect.stores.milvus.server import main\n"
        "raise SystemExit(main(sys.argv[1:]))"
    )
    line = _error_line(_module(str(tmp_path / "srv"), code=hidden))
    assert "milvus-lite" in line and "pip install 'ctxselect[milvus]'" in line


def test_a_port_that_is_not_a_port_is_a_usage_error(tmp_path: Path) -> None:
    done = _module(str(tmp_path / "srv"), "--port", "70000")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "'70000' is not a TCP port: give 1-65535 or 0" in done.stderr.splitlines()[-1]


def _crashing_launches(monkeypatch: pytest.MonkeyPatch, crashes: int) -> list[str]:
    """Make the first ``crashes`` launches a process that aborts (SIGABRT) at once, as
    milvus-lite now and then does while starting; later launches are real."""
    real = MilvusServer._launch
    launched: list[str] = []

    def launch(self: MilvusServer, exe: Path) -> subprocess.Popen[bytes]:
        if len(launched) < crashes:
            launched.append("crash")
            return subprocess.Popen(["sh", "-c", "kill -ABRT $$"])
        launched.append("real")
        return real(self, exe)

    monkeypatch.setattr(MilvusServer, "_launch", launch)
    return launched


def test_a_server_that_crashes_while_starting_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched = _crashing_launches(monkeypatch, crashes=2)
    with MilvusServer(tmp_path / "srv") as server:
        cs.add_documents(_docs(), f"{server.uri}/again", chunk=SPEC)
        assert cs.open_index(f"{server.uri}/again").search("cache", 1)
    assert launched == ["crash", "crash", "real"]


def test_a_server_that_keeps_crashing_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched = _crashing_launches(monkeypatch, crashes=3)
    with pytest.raises(StoreUnreachableError, match="exited with code -6 while starting"):
        MilvusServer(tmp_path / "srv").start()
    assert launched == ["crash"] * 3

"""The Milvus store beyond the contract suite: its server, the CLI end to end, bad input.

Every test runs against the session's real Milvus Lite 2.5.1 server (``milvus_server``
in ``conftest.py``); the contract suite (``test_store_contract.py``) covers the rest.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from store_kinds import milvus_uri

import ctxselect as cs
from ctxselect.errors import (
    ConfigError,
    IndexMismatchError,
    StoreUnreachableError,
)
from ctxselect.ingest import content_hash
from ctxselect.interfaces.cli import commands  # noqa: F401 - registers the commands
from ctxselect.interfaces.cli import store as _store_commands  # noqa: F401
from ctxselect.interfaces.cli.main import cli
from ctxselect.stores import open_store
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus.server import MilvusServer
from ctxselect.stores.milvus.store import MilvusStore
from ctxselect.stores.milvus.vectors import MilvusVectorCache
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=8, tokenizer="chars4")


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id, text, source=doc_id, content_hash=content_hash("", text))


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _raw_chunk_rows(uri: str) -> int:
    """Chunk rows in the collection, every version and leftover included."""
    found = open_store(uri)
    assert isinstance(found, MilvusStore)
    try:
        rows = found._client.query(found.address.name, filter="id >= 0", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])
    finally:
        found.close()


def _server_module(folder: Path) -> subprocess.Popen[str]:
    """``python -m ctxselect.stores.milvus.server FOLDER``, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "ctxselect.stores.milvus.server", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- the server ----------------------------------------------------------------------


def test_the_server_answers_on_loopback_and_stops(milvus_server: Any, tmp_path: Path) -> None:
    assert milvus_server.uri.startswith("milvus://127.0.0.1:")
    own = MilvusServer(tmp_path / "own")
    with own:
        process = own.process
        assert process is not None and process.poll() is None
        client = mc.connect(mc.parse_uri(f"{own.uri}/probe"))
        assert client.list_collections() == []
        client.close()
    assert process.poll() is not None and own.process is None


def test_the_server_keeps_its_log_files_in_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmpdir"  # where glog writes when nobody says otherwise
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("TMP", str(scratch))
    with MilvusServer(tmp_path / "own"):
        pass
    assert list(scratch.iterdir()) == []
    assert list((tmp_path / "own").glob("milvus*.log.*"))


def test_a_server_that_dies_at_start_says_why(tmp_path: Path) -> None:
    (tmp_path / "data" / "milvus.db").mkdir(parents=True)  # a folder where its file goes
    server = MilvusServer(tmp_path / "data", timeout=20)
    started = time.monotonic()
    with pytest.raises(StoreUnreachableError, match=r"127\.0\.0\.1:\d+ (exited|did not)"):
        server.start()
    assert time.monotonic() - started < 25 and server.process is None


def test_the_server_module_prints_the_uri(tmp_path: Path) -> None:
    proc = _server_module(tmp_path / "srv")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("milvus://127.0.0.1:")
        uri = f"{line}/from_module"
        cs.add_documents([_doc("a", "alpha")], uri, chunk=SPEC)
        found = open_store(uri)
        assert found.counts()["documents"] == 1
        found.close()
    finally:
        proc.terminate()  # SIGTERM: the module stops its server before it exits
        proc.wait(30)
    assert proc.returncode == 0
    with pytest.raises(StoreUnreachableError):
        open_store(uri)  # the server went with it


def test_the_server_module_says_when_its_server_dies(tmp_path: Path) -> None:
    proc = _server_module(tmp_path / "srv")
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("milvus://")
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        (server_pid,) = [int(c) for c in children]
        os.kill(server_pid, signal.SIGKILL)  # the Milvus process dies under the module
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
    assert proc.returncode == 1
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert "was killed by signal 9" in line and "server.log" in line and "start it again" in line


# -- end to end through the CLI ----------------------------------------------------------


def test_every_verb_works_on_a_milvus_index(milvus_server: Any, tmp_path: Path) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe quick brown fox jumps over the lazy dog.\n")
    (docs / "b.md").write_text("# Beta\n\nMilvus keeps chunks and runs full text search.\n")
    for i in range(20):  # enough chunks that two changes stay below auto-compaction's 10%
        (docs / f"n{i}.md").write_text(f"Note {i} on filler topic number {i}.\n")
    assert "22 documents" in _run("index", str(docs), "--index", uri)
    assert "a.md#0" in _run("search", "fox", "--index", uri)
    assert "quick brown fox" in _run("select", "fox", "--budget", "200", "--index", uri)
    (docs / "c.md").write_text("Gamma text about dogs.\n")
    assert "1 added" in _run("add", str(docs / "c.md"), "--index", uri)
    assert _run("search", "dogs", "--index", uri).splitlines()[0].split()[2] == "c.md#0"
    assert "1 removed" in _run("remove", "b.md", "--index", uri)
    assert "no chunk matches" in _run("search", "milvus", "--index", uri)
    info = json.loads(_run("info", "--index", uri, "--json"))
    assert (info["index"], info["documents"], info["chunks"]) == (uri, 22, 22)
    assert info["disk_bytes"] > 0 and info["deleted_rows"] == 1 and info["delta_segments"] == 1
    compacted = json.loads(_run("compact", "--index", uri, "--json"))
    assert (compacted["chunks"], compacted["merged_segments"], compacted["dropped_rows"]) == (
        22,
        1,
        1,
    )
    info = json.loads(_run("info", "--index", uri, "--json"))
    assert info["deleted_rows"] == 0 and info["delta_segments"] == 0
    assert "ok" in _run("verify", "--index", uri)
    assert "1 added" in _run("index", str(docs), "--index", uri)  # b.md comes back
    assert json.loads(_run("info", "--index", uri, "--json"))["documents"] == 23
    assert "b.md#0" in _run("search", "milvus", "--index", uri)


# -- bad input -----------------------------------------------------------------------------


def test_a_channel_that_fails_once_on_a_live_server_is_tried_again(
    milvus_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    made: list[str] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:  # as after a GOAWAY (too_many_pings)
        made.append(kwargs["uri"])
        if len(made) == 1:
            raise MilvusException(message="Fail connecting to server (GOAWAY)")
        return MilvusClient(*args, **kwargs)

    monkeypatch.setattr("pymilvus.MilvusClient", flaky)
    client = mc.connect(mc.parse_uri(f"{milvus_server.uri}/probe"))
    assert len(made) == 2 and isinstance(client.list_collections(), list)
    client.close()


def test_a_bad_uri_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="milvus://HOST:PORT/NAME"):
        open_store("milvus://127.0.0.1/notes")
    with pytest.raises(ConfigError, match="collection name"):
        open_store("milvus://127.0.0.1:19530/9-bad")


def test_an_unreachable_server_fails_fast_naming_the_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    uri = f"milvus://127.0.0.1:{port}/notes"
    started = time.monotonic()
    with pytest.raises(StoreUnreachableError, match=f"index {uri} "):
        open_store(uri)
    assert time.monotonic() - started < 5
    monkeypatch.setattr(mc, "TIMEOUT", 2.0)
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        uri = f"milvus://127.0.0.1:{silent.getsockname()[1]}/notes"
        started = time.monotonic()
        with pytest.raises(StoreUnreachableError, match="cannot reach the Milvus server"):
            cs.open_index(uri)
        assert time.monotonic() - started < 10


def test_a_collection_built_otherwise_is_a_mismatch(milvus_server: Any, tmp_path: Path) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    address = mc.parse_uri(uri)
    client = mc.connect(address)
    try:
        client.create_collection(address.name, dimension=8)  # someone else's collection
        with pytest.raises(IndexMismatchError, match="other settings"):
            open_store(uri, create=True)
        client.create_collection(address.meta, dimension=8)
        with pytest.raises(IndexMismatchError, match="lacks the fields"):
            open_store(uri)
    finally:
        client.close()
    other = milvus_uri(tmp_path, milvus_server)
    made = open_store(other, create=True)
    assert isinstance(made, MilvusStore)
    made._put_meta([made.meta_row(-1, "layout", info='{"layout": 99}')], upsert=True)
    made.close()
    with pytest.raises(IndexMismatchError, match="layout 99"):
        open_store(other)


def test_an_interrupted_write_keeps_the_last_generation(
    milvus_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents([_doc("a", "alpha one\n\nalpha two"), _doc("b", "beta")], uri, chunk=SPEC)
    before = _raw_chunk_rows(uri)

    def crash(self: MilvusStore, generation: int) -> None:
        raise RuntimeError("killed before the commit row")

    monkeypatch.setattr(MilvusStore, "_flip", crash)
    new = [_doc("a", "alpha changed"), _doc("c", "gamma one\n\ngamma two")]
    with pytest.raises(RuntimeError, match="killed"):
        cs.add_documents(new, uri, compact_fraction=None)
    monkeypatch.undo()
    assert _raw_chunk_rows(uri) > before  # the rows were written, without a head
    with cs.open_index(uri) as idx:
        assert idx.store.generation() == 1
        assert idx.search("alpha", 5)[0].doc_id == "a"
        assert idx.store.get_document("a").text == "alpha one\n\nalpha two"
        assert idx.store.doc_hashes().keys() == {"a", "b"}
    report = cs.add_documents(new, uri, compact_fraction=None)
    assert (report.added, report.updated, report.generation) == (1, 1, 2)
    found = open_store(uri)
    try:
        ids = [c.chunk_id for c in found.iter_chunks()]
        assert ids == sorted(set(ids)) == ["a#0", "b#0", "c#0", "c#1"]
        assert found.counts() == {"documents": 3, "chunks": 4, "tokens": found.counts()["tokens"]}
        assert found.verify()[1] == []
    finally:
        found.close()
    # the leftovers went: two versions of a's chunks, b and c (the retried write's rows)
    assert _raw_chunk_rows(uri) == before + 3


KILLED_WRITER = """
import os, sys
import ctxselect as cs
from ctxselect.stores.milvus.store import MilvusStore
from ctxselect.stores.milvus.vectors import MilvusVectorCache
from ctxselect.types import Document
MilvusStore._flip = lambda self, generation: os._exit(9)  # killed before the commit row
docs = [Document(f"d{i}", f"delta {i} words", source=f"d{i}") for i in range(3)]
cs.add_documents(docs, sys.argv[1], compact_fraction=None)
"""


def test_a_killed_writer_is_resumed_without_duplicates(milvus_server: Any, tmp_path: Path) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents([_doc("a", "alpha")], uri, chunk=SPEC)
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, uri], timeout=120)
    assert killed.returncode == 9
    store = open_store(uri)
    try:
        assert store.generation() == 1 and store.doc_hashes().keys() == {"a"}
        _checks, problems, removed = store.verify()  # its lease is a dead pid's: not held
        assert problems == [] and removed and "interrupted write" in removed[0]
    finally:
        store.close()
    docs = [_doc(f"d{i}", f"delta {i} words") for i in range(3)]
    report = cs.add_documents(docs, uri, compact_fraction=None)  # takes the dead lease
    assert report.added == 3 and report.generation == 2
    assert _raw_chunk_rows(uri) == 4
    with cs.open_index(uri) as idx:
        assert {h.doc_id for h in idx.search("delta", 10)} == {"d0", "d1", "d2"}


def test_a_server_gone_mid_session_fails_fast_and_quietly(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server = MilvusServer(tmp_path / "gone").start()
    uri = f"{server.uri}/gone"
    try:
        cs.add_documents([_doc("a", "alpha")], uri, chunk=SPEC)
        found = open_store(uri)
    finally:
        server.stop()
    capfd.readouterr()
    started = time.monotonic()
    with pytest.raises(StoreUnreachableError, match=f"index {uri} "):
        found.get_document("a")
    with pytest.raises(StoreUnreachableError):
        cs.open_index(uri)
    assert time.monotonic() - started < 30
    assert "Traceback" not in capfd.readouterr().err  # the client's own logging is quiet
    found.close()


@pytest.mark.parametrize("where", ["vector cache", "commit"])
def test_a_server_killed_mid_write_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    server = MilvusServer(tmp_path / "killed").start()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nalpha words here\n")
    owner, name = (
        (MilvusVectorCache, "put_many") if where == "vector cache" else (MilvusStore, "_flip")
    )
    original = getattr(owner, name)

    def killed_first(*args: Any, **kwargs: Any) -> Any:
        assert server.process is not None
        server.process.kill()  # the server dies; the write then fails, then its clean-up
        server.process.wait()
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, killed_first)
    try:
        result = CliRunner().invoke(
            cli, ["index", str(docs), "--index", f"{server.uri}/killed", "--embedder", "hash"]
        )
    finally:
        server.stop()
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "Milvus server" in result.stderr or "writing index" in result.stderr


def test_the_mcp_server_searches_a_milvus_index(milvus_server: Any, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from ctxselect.interfaces.mcp_server import build_server

    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(
        [_doc("cache.md", "The cache evicts old entries first."), _doc("retry.md", "Retry.")],
        uri,
        chunk=SPEC,
    )

    async def search() -> Any:
        async with Client(build_server(cs.open_index(uri))) as client:
            return await client.call_tool("search", {"query": "cache eviction", "k": 3})

    result = anyio.run(search)
    assert not result.is_error
    assert [h["doc_id"] for h in result.structured_content["hits"]] == ["cache.md"]


def test_an_index_survives_a_server_restart(tmp_path: Path) -> None:
    server = MilvusServer(tmp_path / "data").start()
    uri = f"{server.uri}/kept"
    try:
        cs.add_documents([_doc("a", "alpha one\n\nalpha two"), _doc("b", "beta")], uri, chunk=SPEC)
        cs.remove_documents(["b"], uri, compact_fraction=None)
    finally:
        server.stop()
    again = MilvusServer(tmp_path / "data", port=server.port).start()
    try:
        store = open_store(uri)
        try:
            assert store.generation() == 2 and store.doc_hashes().keys() == {"a"}
            assert store.verify()[1] == []
        finally:
            store.close()
        with cs.open_index(uri) as idx:
            assert [h.chunk_id for h in idx.search("alpha", 5)] == ["a#0", "a#1"]
    finally:
        again.stop()

"""Concurrency: searches keep working while another process writes; one writer at a time."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import ctxselect as cs
from ctxselect.errors import IndexLockedError
from ctxselect.ingest import content_hash
from ctxselect.stores.embedded import sqlite as sqlite_store
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=80, tokenizer="chars4")


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id, text, source=doc_id, content_hash=content_hash("", text))


WRITER = """
import sys
import ctxselect as cs
from ctxselect.ingest import content_hash
from ctxselect.types import Document
ix = sys.argv[1]
for i in range(40):
    text = f"round{i} alpha beta\\n\\nshared words gamma {i}"
    doc = Document(f"w{i % 7}", text, content_hash=content_hash("", text))
    cs.add_documents([doc], ix, compact_fraction=0.0 if i % 3 == 0 else None, wait=30)
print("done", flush=True)
"""

HOLDER = """
import sys, time
import ctxselect as cs
from ctxselect.stores.embedded.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
with store.lock():
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("lazy", [False, True])
def test_searches_keep_working_while_another_process_writes(tmp_path, monkeypatch, lazy):
    if lazy:
        monkeypatch.setattr(sqlite_store, "TEXTS_IN_MEMORY_MAX", 0)
    ix = tmp_path / "ix"
    base = [_doc(f"d{i}", f"alpha document {i}\n\nshared words beta") for i in range(30)]
    cs.add_documents(base, ix, chunk=SPEC)
    writer = _start(WRITER, str(ix))
    searches = 0
    with cs.open_index(ix) as idx:
        while writer.poll() is None:
            for hit in idx.search("shared words alpha", 20):
                assert hit.text and hit.doc_id.startswith(("d", "w"))
            searches += 1
        assert writer.returncode == 0 and writer.stdout is not None
        idx._recheck()
        final = idx.search("round39", 5)
        seen = idx.search("shared words alpha", 20)
    assert searches > 10 and [h.doc_id for h in final] == ["w4"]
    with cs.open_index(ix) as fresh:
        assert fresh.search("shared words alpha", 20) == seen
    assert cs.verify_index(ix).ok


def test_a_second_writer_is_refused_with_the_holder_named_or_waits(tmp_path):
    ix = tmp_path / "ix"
    cs.add_documents([_doc("a", "alpha")], ix, chunk=SPEC)
    holder = _start(HOLDER, str(ix), "30")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    try:
        with pytest.raises(IndexLockedError, match=rf"process {holder.pid} \(.*-c"):
            cs.add_documents([_doc("b", "beta")], ix)
        with cs.open_index(ix) as idx:  # reading never waits for the writer
            assert idx.search("alpha")[0].doc_id == "a"
        cli = subprocess.run(
            [sys.executable, "-m", "ctxselect", "remove", "a", "--index", str(ix)],
            capture_output=True,
            text=True,
        )
        assert cli.returncode == 1 and f"process {holder.pid}" in cli.stderr
        assert "--wait SECONDS" in cli.stderr and "Traceback" not in cli.stderr
    finally:
        holder.kill()
        holder.wait()
    short = _start(HOLDER, str(ix), "0.5")
    assert short.stdout is not None and short.stdout.readline().strip() == "held"
    started = time.monotonic()
    report = cs.add_documents([_doc("b", "beta")], ix, wait=30)
    assert report.added == 1 and time.monotonic() - started > 0.1
    short.wait()


def test_an_index_killed_mid_write_by_its_holder_does_not_block_the_next(tmp_path):
    ix = tmp_path / "ix"
    cs.add_documents([_doc("a", "alpha")], ix, chunk=SPEC)
    holder = _start(HOLDER, str(ix), "30")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    assert cs.add_documents([_doc("b", "beta")], ix).added == 1

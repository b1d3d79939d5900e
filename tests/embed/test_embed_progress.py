"""Embedding progress is honest: chunks/s, ETA and the recorded throughput leave out the
model's load, the bar draws only on a terminal, and a pipe (a CI log) gets no bar text."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import ctxselect as cs
from ctxselect.embed import CachedEmbedder, HashEmbedder, MemoryVectorCache

LOAD = 0.4  # seconds the fake model takes to load on its first call, as minilm loads torch


class SlowLoadEmbedder:
    """A hash embedder that loads for LOAD seconds on its first call, whatever it is given."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(16)
        self.name, self.dim, self.model_id = "slowload", 16, "slowload-16"
        self.loaded = False
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not self.loaded:
            time.sleep(LOAD)
            self.loaded = True
        self.texts += list(texts)
        return self.inner.embed(texts, query=query)


class FakeTerminal(io.StringIO):
    """A captured stderr that says it is a terminal 100 columns wide."""

    def isatty(self) -> bool:
        return True


def _terminal(monkeypatch: pytest.MonkeyPatch) -> FakeTerminal:
    """Make stderr a fake terminal; called in the test body, since pytest's own capture
    puts its stream back in sys.stderr between fixture set-up and the test."""
    screen = FakeTerminal()
    monkeypatch.setattr("sys.stderr", screen)
    monkeypatch.setenv("COLUMNS", "100")
    return screen


def _last_bar(shown: str) -> str:
    """The last state the bar drew (tqdm redraws in place after a carriage return)."""
    return [part for part in shown.split("\r") if part.strip()][-1]


def _texts(n: int) -> list[str]:
    return [f"chunk {i} about topic {i % 7} and its parts" for i in range(n)]


def test_the_measured_speed_leaves_out_the_model_load() -> None:
    model = SlowLoadEmbedder()
    cached = CachedEmbedder(model, MemoryVectorCache())
    cached.embed(_texts(40))
    assert cached.meter.texts == 40
    assert cached.meter.seconds < LOAD / 2, "the load was counted as embedding time"
    assert sorted(model.texts) == sorted(_texts(40)), "each text is embedded exactly once"


def test_a_write_records_the_speed_without_the_load(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "one.md").write_text("# One\n\nText about one thing and its parts.\n")
    folder = tmp_path / "ix"
    cs.index_paths([root], folder, embedder=SlowLoadEmbedder())
    measured = cs.open_index(folder).info().settings["throughput"]
    assert measured["chunks"] == 1
    assert measured["seconds"] < LOAD / 2  # before: 1 chunk "in" 0.4 s, about 2.5 chunks/s


def test_the_bar_shows_chunks_per_second_and_an_eta_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = _terminal(monkeypatch)
    CachedEmbedder(SlowLoadEmbedder(), MemoryVectorCache(), progress=True).embed(_texts(40))
    shown = terminal.getvalue()
    assert "embedding (slowload)" in shown and "loading the model" in shown
    final = _last_bar(shown)
    assert "40/40" in final and "chunk/s" in final
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", final)  # [elapsed<remaining]: the ETA


def test_the_rate_on_the_bar_starts_after_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _terminal(monkeypatch)
    CachedEmbedder(SlowLoadEmbedder(), MemoryVectorCache(), progress=True).embed(_texts(40))
    rate = float(re.findall(r"([\d.]+)chunk/s", _last_bar(terminal.getvalue()))[-1])
    assert rate > 40 / LOAD  # with the load counted, 40 chunks could not beat 100/s


def test_no_bar_without_progress_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _terminal(monkeypatch)
    CachedEmbedder(SlowLoadEmbedder(), MemoryVectorCache()).embed(_texts(5))
    assert terminal.getvalue() == ""


def test_queries_load_nothing_early_and_draw_no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _terminal(monkeypatch)
    model = SlowLoadEmbedder()
    CachedEmbedder(model, MemoryVectorCache(), progress=True).embed(["a query"], query=True)
    assert terminal.getvalue() == "" and model.texts == ["a query"]


def _index_command(tmp_path: Path) -> list[str]:
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    for i in range(30):
        (root / f"note{i}.md").write_text(f"# Note {i}\n\nText about topic {i} and its parts.\n")
    folder = tmp_path / f"ix{len(list(tmp_path.iterdir()))}"
    return [sys.executable, "-m", "ctxselect", "index", str(root), "--index", str(folder),
            "--embedder", "hash"]  # fmt: skip


def test_index_into_a_pipe_writes_no_bar(tmp_path: Path) -> None:
    done = subprocess.run(_index_command(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # a CI log gets no bar text, no carriage returns
    assert "30 documents" in done.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_index_on_a_terminal_shows_the_embedding_rate_and_eta(tmp_path: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios

    main, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    with os.fdopen(main, "rb", buffering=0) as screen:
        process = subprocess.Popen(
            _index_command(tmp_path), stdout=subprocess.PIPE, stderr=follower
        )
        os.close(follower)
        shown = b""
        while True:  # read until the child closes the terminal (EIO on Linux)
            try:
                piece = screen.read(4096)
            except OSError:
                break
            if not piece:
                break
            shown += piece
        assert process.wait(timeout=120) == 0
        assert process.stdout is not None and b"30 documents" in process.stdout.read()
        process.stdout.close()
    text = shown.decode("utf-8", "replace")
    final = _last_bar(text.split("embedding (hash)")[-1])
    assert "30/30" in final and "chunk/s" in final
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", final)

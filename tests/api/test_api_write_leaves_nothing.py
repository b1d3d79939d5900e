"""A first write that fails (unknown embedder, workers that cannot start) leaves no index."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxselect as cs
from ctxselect.errors import UnknownNameError, WorkerError


class FailingExecutor:
    """An executor whose workers never start (a pool spawned without a __main__ guard)."""

    workers = 2

    def map(self, task: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        raise WorkerError("a worker process died before it started: nothing was written")

    def close(self) -> None:
        pass


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(3):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\nalpha beta {i}\n", encoding="utf-8")
    return root


def test_an_unknown_embedder_is_refused_before_the_folder_is_made(corpus, tmp_path):
    ix = tmp_path / "ix"
    with pytest.raises(UnknownNameError, match=r"unknown embedder 'bogus': choose one of .*hash"):
        cs.index_paths([corpus], ix, embedder="bogus")
    with pytest.raises(UnknownNameError, match=r"choose one of .*none"):
        cs.add_documents([cs.Document("a", "alpha")], ix, embedder="bogus")
    with pytest.raises(cs.ConfigError, match="embedder must be an embedder name"):
        cs.index_paths([corpus], ix, embedder=5)
    assert not ix.exists()


def test_a_failed_parallel_first_run_removes_the_index_it_made(corpus, tmp_path):
    ix = tmp_path / "ix"
    with pytest.raises(WorkerError, match="nothing was written"):
        cs.index_paths([corpus], ix, executor=FailingExecutor())
    assert not ix.exists()


def test_an_empty_folder_that_was_there_is_kept_empty(corpus, tmp_path):
    ix = tmp_path / "ix"
    ix.mkdir()
    with pytest.raises(WorkerError):
        cs.index_paths([corpus], ix, executor=FailingExecutor())
    assert ix.is_dir() and not list(ix.iterdir())


def test_a_failed_run_on_an_existing_index_keeps_it(corpus, tmp_path):
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    (corpus / "d9.md").write_text("# New\n\ngamma\n", encoding="utf-8")
    with pytest.raises(WorkerError):
        cs.index_paths([corpus], ix, executor=FailingExecutor())
    with cs.open_index(ix) as idx:
        assert idx.info().documents == 3

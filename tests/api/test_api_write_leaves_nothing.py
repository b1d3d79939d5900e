"""A first write that fails (unknown embedder, workers that cannot start) leaves no index."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxselect as cs
from _support.failing_writes import FailingExecutor, three_notes
from ctxselect.errors import UnknownNameError, WorkerError


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return three_notes(tmp_path)


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

"""The base file a write builds on: stamped when written, refused by the store's own
commits when damaged (whoever calls them), never refused for a rebuild."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ctxselect as cs
from _support.note_index import note_folder
from ctxselect.errors import IndexCorruptError
from ctxselect.stores.embedded import base_check
from ctxselect.stores.embedded.sqlite import SQLiteStore


@pytest.fixture
def index(tmp_path: Path) -> Path:
    cs.index_paths([note_folder(tmp_path / "docs", 4, "widget gear")], tmp_path / "ix")
    return tmp_path / "ix"


def test_written_base_is_stamped_and_ends_where_its_layout_does(index: Path) -> None:
    store = SQLiteStore(index)
    try:
        base = store.read_manifest()["base"]
    finally:
        store.close()
    path = index / base["file"]
    assert base[base_check.STAMP_KEY] == base_check.stamp(path)
    assert base_check.layout_end(base) == path.stat().st_size
    assert base_check.base_problem(index, base) is None


def _empty_update(store: SQLiteStore, *, rebuild: bool) -> int:
    return store.commit_update(
        documents=[],
        chunks=[],
        removed=[],
        arrays={},
        dead_terms={},
        manifest={},
        rebuild=rebuild,
    )


def test_store_commit_refuses_delta_on_truncated_base(index: Path) -> None:
    store = SQLiteStore(index)
    try:
        path = index / store.read_manifest()["base"]["file"]
        generation = store.generation()
        os.truncate(path, 64)
        with store.lock(), pytest.raises(IndexCorruptError, match="64 bytes long"):
            _empty_update(store, rebuild=False)
        with store.lock(), pytest.raises(IndexCorruptError, match="64 bytes long"):
            store.commit_deltas(arrays={}, rowids=[], expected_generation=generation)
        assert store.generation() == generation
    finally:
        store.close()


def test_store_rebuild_is_not_refused(index: Path) -> None:
    """A rebuild never reads the old base: it is the repair."""
    store = SQLiteStore(index)
    try:
        os.truncate(index / store.read_manifest()["base"]["file"], 64)
        with store.lock():
            assert _empty_update(store, rebuild=True) == store.generation()
    finally:
        store.close()

"""An open index whose folder is deleted and built again reads the new index.

A long-running reader (the MCP server, a notebook) kept serving the deleted SQLite file
after ``rm -rf`` and a fresh ``ctxselect index``: its old chunks, offsets and settings,
while ``ctxselect info`` showed the new ones. The reader now notices that the index file
at its address is another one and opens it again.
"""

from __future__ import annotations

import shutil
import time

import pytest

from ctxselect import api
from ctxselect.agent import Sessions
from ctxselect.config import RELOAD_CHECK_SECONDS, ChunkSpec
from ctxselect.errors import IndexNotFoundError


def corpus(tmp_path, word: str):
    root = tmp_path / f"docs-{word}"
    root.mkdir()
    (root / "a.md").write_text(f"# {word}\n\n{word} appears in this note.\n", encoding="utf-8")
    return root


def test_a_rebuilt_index_is_read_instead_of_the_deleted_one(tmp_path):
    folder = tmp_path / "ix"
    api.index_paths([corpus(tmp_path, "walrus")], folder)
    index = api.open_index(folder)
    assert [h.doc_id for h in index.search("walrus", 5)] == ["a.md"]
    shutil.rmtree(folder)
    api.index_paths([corpus(tmp_path, "pelican")], folder, chunk=ChunkSpec(size=64))
    assert index.search("walrus", 5) == []
    assert [h.doc_id for h in index.search("pelican", 5)] == ["a.md"]
    assert index.settings.chunk.size == 64 and index.info().settings["chunk"]["size"] == 64
    index.close()


def test_a_deleted_index_is_not_found_rather_than_served(tmp_path):
    folder = tmp_path / "ix"
    api.index_paths([corpus(tmp_path, "walrus")], folder)
    index = api.open_index(folder)
    assert index.search("walrus", 5)
    shutil.rmtree(folder)
    time.sleep(2 * RELOAD_CHECK_SECONDS)  # a reader looks again at most this often
    with pytest.raises(IndexNotFoundError):
        index.search("walrus", 5)
    api.index_paths([corpus(tmp_path, "heron")], folder)
    assert [h.doc_id for h in index.search("heron", 5)] == ["a.md"]
    index.close()


def test_a_session_server_serves_the_rebuilt_index(tmp_path):
    folder = tmp_path / "ix"
    api.index_paths([corpus(tmp_path, "walrus")], folder)
    sessions = Sessions.open(str(folder))
    try:
        first = sessions.select("s", "walrus", budget=500, detail="full")
        assert "walrus" in "".join(p.text for p in first.pieces)
        shutil.rmtree(folder)
        api.index_paths([corpus(tmp_path, "pelican")], folder)
        again = sessions.select("s", "pelican", budget=500, detail="full")
        assert "pelican" in "".join(p.text for p in again.pieces)
    finally:
        sessions.close()

"""An index records how its chunker cut text (``chunk_layout``) and re-chunks when that changes.

A new ctxselect may cut the same file differently with the same settings (``auto`` now
chunks RST by sections and source files by definitions). Without the record, unchanged
files would keep their old chunks and changed ones get new ones: an update would no longer
equal a rebuild.
"""

from __future__ import annotations

import pytest

import ctxselect as cs
from ctxselect.chunk import chunk_layout
from ctxselect.config import ChunkSpec
from ctxselect.errors import ConfigError
from ctxselect.stores import open_store


def _forget_layout(ix) -> None:
    """Make the index look written before layouts were recorded."""
    store = open_store(ix)
    try:
        with store.lock(0):
            store.commit_settings({"chunk_layout": ""})
    finally:
        store.close()


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.rst").write_text(
        "Guide\n=====\n\nIntro text.\n\nInstall\n-------\n\npip install it.\n", encoding="utf-8"
    )
    (folder / "notes.md").write_text("# Notes\n\nSome notes.\n", encoding="utf-8")
    return folder


def test_a_new_index_records_its_chunkers_layout(corpus, tmp_path) -> None:
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with cs.open_index(ix) as idx:
        assert idx.settings.chunk_layout == chunk_layout(ChunkSpec()) != ""


def test_an_older_layout_is_rechunked_by_index_and_refused_by_add(corpus, tmp_path) -> None:
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with cs.open_index(ix) as idx:
        before = [c.chunk_id for c in idx.store.iter_chunks()]
    _forget_layout(ix)
    with pytest.raises(ConfigError, match="layout unrecorded"):
        cs.add_paths([corpus / "notes.md"], ix)
    report = cs.index_paths(index=ix)
    assert report.rebuilt and "cuts text differently" in report.note
    with cs.open_index(ix) as idx:
        assert idx.settings.chunk_layout == chunk_layout(ChunkSpec())
        assert [c.chunk_id for c in idx.store.iter_chunks()] == before  # same text, same cut
    again = cs.index_paths(index=ix)
    assert not again.rebuilt and again.note == ""


def test_an_index_of_the_first_paragraph_layout_is_re_chunked_once(corpus, tmp_path) -> None:
    """Paragraph indexes written before its layout was recorded (layout "") are cut
    anew once by layout 2 (a lone CR is a line break), then left alone."""
    ix = tmp_path / "ix"
    spec = ChunkSpec(chunker="paragraph", size=400)
    cs.index_paths([corpus], ix, chunk=spec)
    _forget_layout(ix)
    report = cs.index_paths(index=ix)
    assert report.rebuilt and "cuts text differently" in report.note
    again = cs.index_paths(index=ix)
    assert not again.rebuilt and again.updated == 0

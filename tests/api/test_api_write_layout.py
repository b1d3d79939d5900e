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


def test_an_older_layout_is_rechunked_by_index(corpus, tmp_path) -> None:
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with cs.open_index(ix) as idx:
        before = [c.chunk_id for c in idx.store.iter_chunks()]
    _forget_layout(ix)
    report = cs.index_paths(index=ix)
    assert report.rebuilt and "cuts text differently" in report.note
    with cs.open_index(ix) as idx:
        assert idx.settings.chunk_layout == chunk_layout(ChunkSpec())
        assert [c.chunk_id for c in idx.store.iter_chunks()] == before  # same text, same cut
    again = cs.index_paths(index=ix)
    assert not again.rebuilt and again.note == ""


def test_an_older_layout_is_rechunked_by_add_from_the_stored_documents(corpus, tmp_path) -> None:
    """add re-chunks every stored document once, so an index built by add_documents
    (no roots to re-scan) keeps taking updates after an upgrade."""
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with cs.open_index(ix) as idx:
        before = list(idx.store.iter_chunks())
    _forget_layout(ix)
    (corpus / "notes.md").write_text("# Notes\n\nSome notes, edited.\n", encoding="utf-8")
    report = cs.add_paths([corpus / "notes.md"], ix)
    assert report.rebuilt and "cuts text differently" in report.note
    with cs.open_index(ix) as idx:
        assert idx.settings.chunk_layout == chunk_layout(ChunkSpec())
        after = list(idx.store.iter_chunks())
    assert [c for c in after if c.doc_id == "guide.rst"] == [
        c for c in before if c.doc_id == "guide.rst"
    ], "the stored document was re-chunked from its stored text, the same way"
    assert any("edited" in c.text for c in after)
    assert cs.verify_index(ix).ok


def test_an_api_built_index_takes_documents_after_a_layout_change(tmp_path) -> None:
    ix = tmp_path / "ix"
    old = cs.Document("a.md", "# A\n\nalpha text", source="a.md", content_hash="ha")
    cs.add_documents([old], ix)
    _forget_layout(ix)
    new = cs.Document("b.md", "# B\n\nbeta text", source="b.md", content_hash="hb")
    cs.add_documents([new], ix)
    gone = cs.remove_documents(["a.md"], ix)
    assert gone.removed == 1
    with cs.open_index(ix) as idx:
        assert sorted(idx.store.doc_hashes()) == ["b.md"]
        assert [h.doc_id for h in idx.search("beta", 3)] == ["b.md"]


def test_other_settings_still_need_index_not_add(corpus, tmp_path) -> None:
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with pytest.raises(ConfigError, match="built with other settings"):
        cs.add_documents(
            [cs.Document("x.md", "# X\n\nx", source="x.md", content_hash="hx")],
            ix,
            chunk=ChunkSpec(size=64),
        )


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

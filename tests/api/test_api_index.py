"""The facade end to end on a small folder: index, re-index, search, select, explain, info."""

from __future__ import annotations

import pytest

import ctxselect as cs
from ctxselect.errors import ConfigError, IndexNotFoundError, UnknownNameError

GUIDE = """# Guide

Intro paragraph about the tool and what it does for retrieval.

## Install

Run the installer. It needs Python and a virtual environment.

### Linux

On Linux use the package manager, then the installer.

## Usage

Call select with a budget in tokens; it returns chunks that fit.
"""


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "notes.txt").write_text(
        "Metastability appears when a flip-flop samples an asynchronous signal.\n\n"
        "A two-stage synchronizer reduces the failure rate.\n",
        encoding="utf-8",
    )
    (root / "code.py").write_text("def reset(state):\n    return state.clear()\n", encoding="utf-8")
    return root


def test_index_then_reindex_unchanged_does_no_work(corpus, tmp_path):
    ix = tmp_path / "ix"
    first = cs.index_paths([corpus], ix)
    assert (first.added, first.updated, first.removed, first.documents) == (3, 0, 0, 3)
    assert first.rebuilt and first.chunks >= 3
    again = cs.index_paths([corpus], ix)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 3)
    assert not again.rebuilt


def test_reindex_picks_up_modified_new_and_removed_files(corpus, tmp_path):
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    (corpus / "notes.txt").write_text("Completely new text about caches.\n", encoding="utf-8")
    (corpus / "code.py").unlink()
    (corpus / "extra.md").write_text("# Extra\n\nMore words here.\n", encoding="utf-8")
    report = cs.index_paths([], ix)  # no paths: re-scan the index's own roots
    assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, 1)
    with cs.open_index(ix) as idx:
        assert idx.search("caches")[0].doc_id == "notes.txt"
        assert idx.search("reset state") == [] or all(
            h.doc_id != "code.py" for h in idx.search("reset state")
        )


def test_changed_settings_rechunk_everything(corpus, tmp_path):
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    report = cs.index_paths([corpus], ix, chunk=cs.ChunkSpec(chunker="tokens", size=16))
    assert report.updated == 3 and report.rebuilt and "re-chunked" in report.note
    with cs.open_index(ix) as idx:
        assert idx.chunk_spec.size == 16
        assert all(n <= 16 for n in idx.table.n_tokens)


def test_search_select_explain_info(corpus, tmp_path):
    idx = cs.build_index([corpus], tmp_path / "ix")
    hits = idx.search("synchronizer metastability", k=5)
    assert hits[0].doc_id == "notes.txt" and hits[0].rank == 1
    for mode in ("bm25", "tfidf", "tfidf-sum"):
        top = idx.search("synchronizer", k=1, mode=mode)[0]
        explanation = idx.explain("synchronizer", top.chunk_id, mode=mode)
        assert explanation.score == pytest.approx(top.score, rel=1e-6)
        assert sum(t.contribution for t in explanation.terms) == pytest.approx(top.score, rel=1e-5)
    selection = idx.select("install on linux", budget=200)
    assert 0 < selection.tokens_used <= 200 and selection.chunks
    assert "Linux" in idx.render(selection)
    info = idx.info()
    assert info.documents == 3 and info.chunks == len(idx.table) and info.disk_bytes > 0
    assert set(info.modes) >= {"bm25", "tfidf", "tfidf-sum"}
    idx.close()


def test_chunk_offsets_hold_against_stored_documents(corpus, tmp_path):
    with cs.build_index([corpus], tmp_path / "ix") as idx:
        for chunk in idx.store.iter_chunks():
            doc = idx.get_document(chunk.doc_id)
            assert doc.text[chunk.start : chunk.end] == chunk.text


def test_tiny_budget_gives_an_empty_selection_that_says_why(corpus, tmp_path):
    with cs.build_index([corpus], tmp_path / "ix") as idx:
        with pytest.raises(ConfigError, match="budget 3 is below the minimum of 100 tokens"):
            idx.select("synchronizer", budget=3)  # the range the CLI, MCP and adapters take
        selection = idx.select_ranked(idx.rank("synchronizer", idx.depth(3)), 3)
    assert selection.chunks == () and selection.tokens_used == 0
    assert "budget" in selection.note


def test_missing_index_and_unknown_mode_errors(corpus, tmp_path):
    with pytest.raises(IndexNotFoundError, match="ctxselect index"):
        cs.open_index(tmp_path / "missing")
    with (
        cs.build_index([corpus], tmp_path / "ix") as idx,
        pytest.raises(UnknownNameError, match="bm25"),
    ):
        idx.search("x", mode="nope")


def test_chunk_file_without_indexing(corpus):
    chunks = cs.chunk_file(corpus / "guide.md", cs.ChunkSpec(chunker="markdown", size=64))
    assert any("Guide > Install > Linux" in c.header for c in chunks)


def test_the_write_path_lives_in_api_write_and_maintain_and_is_re_exported():
    import ctxselect.api
    import ctxselect.api.maintain
    import ctxselect.api.write

    assert cs.index_paths is ctxselect.api.index_paths is ctxselect.api.write.index_paths
    for name in ("add_paths", "add_documents", "remove_documents"):
        assert getattr(cs, name) is getattr(ctxselect.api.write, name)
    for name in ("compact_index", "verify_index"):
        assert getattr(cs, name) is getattr(ctxselect.api.maintain, name)


def test_the_table_and_info_follow_updates_before_compaction(corpus, tmp_path):
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with cs.open_index(ix) as idx:
        assert idx.info().delta_segments == 0
        extra = cs.Document("extra.txt", "Caches hold lines.", content_hash="e")
        cs.add_documents([extra], ix, compact_fraction=None)
        info = idx.info()
        assert info.delta_segments == 1 and info.delta_rows == 1 and info.documents == 4
        assert "extra.txt#0" in idx.table.row_of and len(idx.table) == info.chunks
        assert idx.get_chunk("extra.txt#0").text == "Caches hold lines."

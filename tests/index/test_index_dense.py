"""Dense retrieval in the stored index: updates equal a rebuild, the vector cache, crashes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dense_corpus import (
    SPEC,
    WORDS,
    CountingEmbedder,
    assert_same_hits,
    assert_same_results,
    fresh_build,
    text,
    write_corpus,
)

import ctxselect as cs
from ctxselect.api import modes
from ctxselect.config import DEFAULT_ANN_THRESHOLD, FuseSpec
from ctxselect.embed import text_key
from ctxselect.index.writer import indexed_text
from ctxselect.stores.embedded.sqlite import SQLiteStore

KEYWORD = ("bm25", "tfidf", "tfidf-sum")


def test_a_hash_build_records_the_embedder_and_searches_dense_and_hybrid(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs", 6)
    report = cs.index_paths([root], tmp_path / "ix", chunk=SPEC, embedder="hash")
    assert report.added == 6 and report.generation == 1
    with cs.open_index(tmp_path / "ix") as idx:
        assert idx.manifest["embedder"] == {
            "name": "hash",
            "model_id": "hash-v1-256",
            "dim": 256,
            "ann_threshold": DEFAULT_ANN_THRESHOLD,
        }
        assert idx.manifest["modes"] == [*KEYWORD, "dense"]
        assert idx.info().settings["embedder"]["model_id"] == "hash-v1-256"
        dense = idx.search("apple banana", 5, "dense")
        assert [h.rank for h in dense] == [1, 2, 3, 4, 5]
        assert all(-1.0 <= h.score <= 1.0 for h in dense)
        assert dense == sorted(dense, key=lambda h: (-h.score, h.chunk_id))
        hybrid = idx.search("apple banana", 5, "hybrid")
        assert len(hybrid) == 5 and idx.fusion == FuseSpec()
        top = idx.explain("apple banana", dense[0].chunk_id, "dense")
        assert top.score == pytest.approx(dense[0].score, abs=1e-6)


def _change_files(root) -> None:
    """Add, modify, delete and rename files under ``root``."""
    (root / "f00.txt").write_text(text(100), encoding="utf-8")  # modified
    (root / "f01.txt").unlink()  # deleted
    (root / "f02.txt").rename(root / "moved.txt")  # renamed
    (root / "new.txt").write_text(text(200, 50), encoding="utf-8")  # added


def test_updates_in_place_equal_a_fresh_build_before_and_after_compaction(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", compact_fraction=None)
    _change_files(root)
    first = cs.index_paths([], ix, compact_fraction=None)
    assert (first.added, first.updated, first.removed, first.renamed) == (1, 1, 1, 1)
    assert not first.compacted and first.delta_segments == 1
    (root / "new.txt").write_text(text(201, 40), encoding="utf-8")  # a delta row dies
    (root / "f03.txt").write_text(text(3) + " " + text(300, 7), encoding="utf-8")
    second = cs.index_paths([], ix, compact_fraction=None)
    assert second.updated == 2 and second.delta_segments == 2
    reference = fresh_build(root, tmp_path / "fresh")
    with cs.open_index(ix) as idx, cs.open_index(reference) as want:
        assert idx.info().deleted_rows > 0
        # hybrid waits for compaction: see test_hybrid_ties_break_on_chunk_id_across_segments
        assert_same_results(idx, want, ("bm25", "tfidf-sum", "dense"))
        assert cs.compact_index(ix).merged_segments == 2
        assert idx.info().delta_segments == 0  # the open index reloads the compacted base
        assert_same_results(idx, want, (*KEYWORD, "dense", "hybrid"))
        snap, fresh = idx.store.snapshot(), want.store.snapshot()
        for name in ("vectors", "embedded", "model"):
            assert np.array_equal(
                snap.segments["dense"].base[name], fresh.segments["dense"].base[name]
            )
    assert cs.verify_index(ix).ok


def test_dense_ties_break_on_chunk_id_across_segments(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs", 8)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", compact_fraction=None)
    (root / "a_copy.txt").write_text(text(5), encoding="utf-8")  # f05's text, sorts first
    cs.index_paths([], ix, compact_fraction=None)
    reference = fresh_build(root, tmp_path / "fresh")
    with cs.open_index(ix) as idx, cs.open_index(reference) as want:
        hits = idx.search(text(5)[:40], 4, "dense")
        assert [h.doc_id for h in hits[:2]] == ["a_copy.txt", "f05.txt"]  # tied, by chunk_id
        assert hits[0].score == hits[1].score
        assert_same_results(idx, want, ("dense",), k=30)


def test_hybrid_ties_break_on_chunk_id_across_segments(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", compact_fraction=None)
    (root / "a_copy.txt").write_text(text(3), encoding="utf-8")  # ties with f03's chunks
    cs.index_paths([], ix, compact_fraction=None)
    reference = fresh_build(root, tmp_path / "fresh")
    with cs.open_index(ix) as idx, cs.open_index(reference) as want:
        for query in (f"{a} {b}" for a, b in itertools.combinations(WORDS, 2)):
            assert_same_hits(idx.search(query, 30, "hybrid"), want.search(query, 30, "hybrid"))


def _cached_keys(ix) -> set[str]:
    with cs.open_index(ix) as idx:
        return {k for (k,) in idx.store._conn.execute("SELECT key FROM vectors")}


def _live_texts(ix) -> list[str]:
    with cs.open_index(ix) as idx:
        return [indexed_text(c) for c in idx.store.iter_chunks()]


def test_reindexing_never_embeds_an_unchanged_chunk(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs")
    (root / "short.txt").write_text("iris jade kiwi", encoding="utf-8")  # one chunk at any size
    ix = tmp_path / "ix"
    first = CountingEmbedder()
    cs.index_paths([root], ix, chunk=SPEC, embedder=first, compact_fraction=None)
    assert sorted(first.seen) == sorted(set(_live_texts(ix)))  # each distinct text once
    before = set(_live_texts(ix))

    (root / "f05.txt").write_text(text(5) + " lemon mango", encoding="utf-8")
    modify = CountingEmbedder()
    report = cs.index_paths([], ix, embedder=modify, compact_fraction=None)
    assert report.updated == 1 and report.rebuilt
    changed = set(_live_texts(ix)) - before
    assert modify.seen and sorted(modify.seen) == sorted(changed)
    with cs.open_index(ix) as idx:
        f05 = [indexed_text(c) for c in idx.store.chunks_of(["f05.txt"])]
    assert 0 < len(modify.seen) < len(f05) and f05[0] not in modify.seen  # the head is reused

    (root / "f06.txt").rename(root / "renamed.txt")
    rename = CountingEmbedder()
    assert cs.index_paths([], ix, embedder=rename, compact_fraction=None).renamed == 1
    assert rename.seen == []

    before = set(_live_texts(ix))
    bigger = cs.ChunkSpec(chunker="tokens", size=16)
    rebuild = CountingEmbedder()
    report = cs.index_paths([], ix, chunk=bigger, embedder=rebuild)
    assert "re-chunked" in report.note
    after = _live_texts(ix)
    assert "iris jade kiwi" in after and "iris jade kiwi" not in rebuild.seen
    assert sorted(rebuild.seen) == sorted(set(after) - before)
    assert _cached_keys(ix) == {text_key(t) for t in after}  # pruned to the live chunks


def test_compaction_prunes_vectors_no_live_chunk_uses(tmp_path) -> None:
    root = write_corpus(tmp_path / "docs")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", compact_fraction=None)
    (root / "f05.txt").write_text(text(105), encoding="utf-8")
    (root / "f06.txt").unlink()
    cs.index_paths([], ix, compact_fraction=None)
    live = {text_key(t) for t in _live_texts(ix)}
    assert _cached_keys(ix) > live  # the old chunks' vectors wait for compaction
    cs.compact_index(ix)
    assert _cached_keys(ix) == live
    (root / "f06.txt").write_text(text(6), encoding="utf-8")  # back: embedded again
    counting = CountingEmbedder()
    cs.index_paths([], ix, embedder=counting, compact_fraction=None)
    assert counting.seen and all(text_key(t) not in live for t in counting.seen)


def test_blank_texts_are_never_embedded(tmp_path) -> None:
    store = SQLiteStore(tmp_path / "ix", create=True)
    counting = CountingEmbedder()
    spec = modes.embedder_spec(counting, 1)
    ops = modes.dense_ops(spec, store.vector_cache(), given=counting)
    raw = ops.analyze(["apple banana", "", "  \n\t", "cherry"])
    assert sorted(counting.seen) == ["apple banana", "cherry"]
    assert raw["embedded"].tolist() == [1, 0, 0, 1]
    assert not raw["vectors"][1:3].any()
    assert np.allclose(np.linalg.norm(raw["vectors"][[0, 3]], axis=1), 1.0)
    base = ops.finish(raw)
    assert "ann" in base and bytes(base["model"]) == b"hash-v1-256"  # 2 embedded rows >= 1
    store.close()


class _Killed(Exception):
    """Stands for the process dying in the middle of an index run."""


def _snapshot_state(ix) -> tuple[int, dict[str, str], list[str]]:
    with cs.open_index(ix) as idx:
        hits = [h.chunk_id for h in idx.search("apple banana", 10, "dense")]
        return idx.info().generation, idx.store.doc_hashes(), hits


def test_an_interrupted_embedding_keeps_its_vectors_and_the_last_commit(
    tmp_path, monkeypatch
) -> None:
    root = write_corpus(tmp_path / "docs", 6)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", compact_fraction=None)
    state = _snapshot_state(ix)
    for i in range(6):
        (root / f"g{i}.txt").write_text(text(50 + i), encoding="utf-8")
    monkeypatch.setattr("ctxselect.embed.batch.CHECKPOINT", 4)  # write vectors every 4 texts

    class Dying(CountingEmbedder):
        def embed(self, texts, *, query=False):
            if len(self.seen) >= 8:
                raise _Killed
            return super().embed(texts, query=query)

    dying = Dying()
    with pytest.raises(_Killed):
        cs.index_paths([], ix, embedder=dying, compact_fraction=None)
    assert len(dying.seen) == 8  # two checkpoints' worth embedded, then killed
    assert _snapshot_state(ix) == state and cs.verify_index(ix).ok
    assert {text_key(t) for t in dying.seen} <= _cached_keys(ix)

    resumed = CountingEmbedder()
    report = cs.index_paths([], ix, embedder=resumed, compact_fraction=None)
    assert report.added == 6
    assert resumed.seen and not set(resumed.seen) & set(dying.seen)


def test_a_failed_commit_keeps_the_vectors_embedded_before_it(tmp_path, monkeypatch) -> None:
    root = write_corpus(tmp_path / "docs", 6)
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=SPEC, embedder="hash", compact_fraction=None)
    state = _snapshot_state(ix)
    (root / "f02.txt").write_text(text(77), encoding="utf-8")
    (root / "new.txt").write_text(text(78), encoding="utf-8")

    def die(*args, **kwargs):
        raise _Killed

    monkeypatch.setattr(SQLiteStore, "commit_update", die)
    first = CountingEmbedder()
    with pytest.raises(_Killed):
        cs.index_paths([], ix, embedder=first, compact_fraction=None)
    assert first.seen
    monkeypatch.undo()
    assert _snapshot_state(ix) == state and cs.verify_index(ix).ok
    again = CountingEmbedder()
    report = cs.index_paths([], ix, embedder=again, compact_fraction=None)
    assert (report.added, report.updated) == (1, 1) and again.seen == []
    with cs.open_index(ix) as idx:
        assert idx.search(text(78), 1, "dense")[0].doc_id == "new.txt"

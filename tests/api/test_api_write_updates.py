"""Incremental updates through the facade: re-scans, add, remove, compaction, reloads."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import ctxselect as cs
from _support.word_salad import SPEC, WORDS
from ctxselect.api import retriever_for
from ctxselect.chunk import make_chunker
from ctxselect.config import MAX_DELTA_SEGMENTS
from ctxselect.errors import ConfigError, InputError, NotFoundError
from ctxselect.ingest import content_hash
from ctxselect.stores.embedded import sqlite as sqlite_store
from ctxselect.types import Document

MODES = ("bm25", "tfidf", "tfidf-sum")
QUERIES = ("apple banana", "cherry", "kiwi lemon mango", "grape grape fig", "date elder")


def make_doc(doc_id: str, seed: int, n: int = 30) -> Document:
    text = " ".join(WORDS[(seed * 7 + i * i + i * seed) % len(WORDS)] for i in range(n))
    return Document(doc_id=doc_id, text=text, source=doc_id, content_hash=content_hash("", text))


def rebuilt(docs: dict[str, Document], mode: str):
    """The reference: an in-memory retriever built from scratch over the final corpus."""
    chunker = make_chunker(SPEC)
    chunks = [c for d in docs.values() for c in chunker.chunk(d)]
    return retriever_for(chunks, mode)


def assert_equals_rebuild(index: cs.Index, docs: dict[str, Document]) -> None:
    for mode in MODES:
        reference = rebuilt(docs, mode)
        for query in QUERIES:
            got, want = index.search(query, 10, mode), reference.search(query, 10)
            assert [h.chunk_id for h in got] == [h.chunk_id for h in want], (mode, query)
            for g, w in zip(got, want, strict=True):
                assert g.score == pytest.approx(w.score, rel=1e-6, abs=1e-9)
                assert (g.text, g.start, g.end, g.doc_id) == (w.text, w.start, w.end, w.doc_id)


@pytest.fixture
def docs() -> dict[str, Document]:
    return {f"d{i:02d}": make_doc(f"d{i:02d}", i) for i in range(30)}


def test_updates_before_compaction_equal_a_rebuild_for_bm25(tmp_path, docs):
    ix = tmp_path / "ix"
    cs.add_documents(list(docs.values()), ix, chunk=SPEC, compact_fraction=None)
    changed = [make_doc(f"d{i:02d}", 100 + i, n=10 + 9 * i) for i in range(5)]
    report = cs.add_documents(changed, ix, compact_fraction=None)
    assert (report.added, report.updated, report.compacted) == (0, 5, False)
    docs.update({d.doc_id: d for d in changed})
    cs.remove_documents(["d10", "d11"], ix, compact_fraction=None)
    del docs["d10"], docs["d11"]
    with cs.open_index(ix) as idx:
        info = idx.info()
        assert info.delta_segments == 1 and info.deleted_rows > 0 and info.avgdl_drift > 0
        for query in QUERIES:
            for mode in ("bm25", "tfidf-sum"):  # exact at all times: the same hits, bit for bit
                assert idx.search(query, 1000, mode) == rebuilt(docs, mode).search(query, 1000)
            for hit in idx.search(query, 5):
                assert idx.explain(query, hit.chunk_id).score == hit.score
            # the cosine matches the same chunks; base rows' lengths wait for compaction
            want = {h.chunk_id for h in rebuilt(docs, "tfidf").search(query, 1000)}
            assert {h.chunk_id for h in idx.search(query, 1000, "tfidf")} == want
        assert cs.compact_index(ix).dropped_rows == info.deleted_rows
        assert_equals_rebuild(idx, docs)  # the open index reloads the compacted generation
        assert idx.info().delta_segments == 0 and idx.info().avgdl_drift == 0.0
    assert cs.verify_index(ix).ok


def test_automatic_compaction_and_delta_consolidation(tmp_path, docs):
    ix = tmp_path / "ix"
    cs.add_documents(list(docs.values()), ix, chunk=SPEC)
    first = cs.add_documents([make_doc("d00", 55)], ix, compact_fraction=0.5)
    assert not first.compacted and first.delta_segments == 1
    for i in range(MAX_DELTA_SEGMENTS):  # one delta per update; the 9th merges them into one
        report = cs.add_documents([make_doc(f"n{i}", 200 + i, n=3)], ix, compact_fraction=0.5)
    assert report.delta_segments == 1 and not report.compacted
    docs.update({"d00": make_doc("d00", 55)})
    docs.update({f"n{i}": make_doc(f"n{i}", 200 + i, n=3) for i in range(MAX_DELTA_SEGMENTS)})
    big = cs.add_documents([make_doc(f"d{i:02d}", 300 + i) for i in range(20)], ix)
    assert big.compacted and big.delta_segments == 0  # 10% of the index changed: compacted
    docs.update({f"d{i:02d}": make_doc(f"d{i:02d}", 300 + i) for i in range(20)})
    with cs.open_index(ix) as idx:
        assert_equals_rebuild(idx, docs)


def test_lazy_rows_search_like_in_memory_rows(tmp_path, docs, monkeypatch):
    ix = tmp_path / "ix"
    cs.add_documents(list(docs.values()), ix, chunk=SPEC)
    cs.add_documents([make_doc("d03", 77), make_doc("zz", 78)], ix, compact_fraction=None)
    with cs.open_index(ix) as eager:
        expected = {(m, q): eager.search(q, 5, m) for m in MODES for q in QUERIES}
        top = expected[("bm25", "apple banana")][0].chunk_id
        explained = eager.explain("apple banana", top)
    monkeypatch.setattr(sqlite_store, "TEXTS_IN_MEMORY_MAX", 0)
    with cs.open_index(ix) as lazy:
        assert not isinstance(lazy.retriever().table, cs.ChunkTable)
        assert {(m, q): lazy.search(q, 5, m) for m in MODES for q in QUERIES} == expected
        assert lazy.explain("apple banana", top) == explained
        assert lazy.select("apple banana", 200).tokens_used > 0


def test_a_rescan_finds_new_modified_deleted_and_renamed_files(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(4):
        (root / f"f{i}.txt").write_text(make_doc("x", i).text, encoding="utf-8")
    ix = tmp_path / "ix"
    first = cs.index_paths([root], ix, chunk=SPEC)
    assert (first.added, first.compacted, first.generation) == (4, True, 1)
    again = cs.index_paths([], ix)
    assert not again.rebuilt and again.unchanged == 4 and again.generation == 1
    (root / "f0.txt").write_text(make_doc("x", 40).text, encoding="utf-8")
    (root / "f1.txt").unlink()
    (root / "f2.txt").rename(root / "moved.txt")
    (root / "f9.txt").write_text(make_doc("x", 9).text, encoding="utf-8")
    report = cs.index_paths([], ix, compact_fraction=None)
    assert (report.added, report.updated, report.removed) == (1, 1, 1)
    assert (report.renamed, report.unchanged, report.documents) == (1, 1, 4)
    with cs.open_index(ix) as idx:
        moved = [c for c in idx.store.iter_chunks() if c.doc_id == "moved.txt"]
        assert moved and all(c.chunk_id.startswith("moved.txt#") for c in moved)
        assert all(h.doc_id != "f2.txt" for h in idx.search("apple banana cherry", 50))
        final = {
            p.name: Document(p.name, p.read_text(), content_hash="") for p in sorted(root.iterdir())
        }
        assert_equals_rebuild_after_compaction(idx, ix, final)


def assert_equals_rebuild_after_compaction(
    idx: cs.Index, ix: object, docs: dict[str, Document]
) -> None:
    cs.compact_index(ix)  # type: ignore[arg-type]
    assert_equals_rebuild(idx, docs)


def test_add_and_remove_single_documents(tmp_path):
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha beta gamma", encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix)
    (root / "sub" / "b.txt").write_text("delta epsilon banana", encoding="utf-8")
    report = cs.add_paths([root / "sub" / "b.txt"], ix)
    assert report.added == 1 and report.documents == 2
    with cs.open_index(ix) as idx:
        assert idx.search("epsilon")[0].doc_id == "sub/b.txt"  # the id a re-scan gives it
    assert cs.index_paths([], ix).unchanged == 2  # and a re-scan agrees
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("zeta", encoding="utf-8")
    with pytest.raises(InputError, match="outside the index's roots"):
        cs.add_paths([outside], ix)
    with pytest.raises(NotFoundError, match=r"no document 'nope'.*nothing was removed"):
        cs.remove_documents(["a.txt", "nope"], ix)
    assert cs.remove_documents(["sub/b.txt"], ix).removed == 1
    with cs.open_index(ix) as idx:
        assert idx.search("epsilon") == [] and idx.info().documents == 1
    with pytest.raises(ConfigError, match="ctxselect index"):
        cs.add_documents([Document("c", "x y", content_hash="c")], ix, chunk=SPEC)


def test_documents_made_without_a_hash_are_replaced_when_they_change(tmp_path):
    ix = tmp_path / "ix"
    assert cs.add_documents([Document("a", "alpha wombat")], ix).added == 1
    report = cs.add_documents([Document("a", "new quokka")], ix)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 0)
    with cs.open_index(ix) as idx:
        assert idx.get_document("a").text == "new quokka"
        assert [h.doc_id for h in idx.search("quokka")] == ["a"] and idx.search("wombat") == []
    assert cs.add_documents([Document("a", "new quokka")], ix).unchanged == 1  # same again
    tagged = Document("a", "new quokka", fields=(("lang", "en"),))
    assert cs.add_documents([tagged], ix).updated == 1  # its fields are part of it too
    with cs.open_index(ix) as idx:
        assert idx.search("quokka", where={"lang": "en"})[0].doc_id == "a"


def test_an_open_index_sees_commits_from_another_process(tmp_path, docs):
    ix = tmp_path / "ix"
    cs.add_documents(list(docs.values()), ix, chunk=SPEC)
    with cs.open_index(ix) as idx:
        assert idx.search("quasar") == []
        code = textwrap.dedent(
            f"""
            import ctxselect as cs
            from ctxselect.types import Document
            cs.add_documents([Document("q", "quasar pulsar", content_hash="q")], {str(ix)!r})
            """
        )
        subprocess.run([sys.executable, "-c", code], check=True)
        idx._recheck()  # skip the up-to-20-ms check interval (RELOAD_CHECK_SECONDS)
        assert [h.doc_id for h in idx.search("quasar")] == ["q"]
        cs.remove_documents(["q"], ix)  # a commit from this process is seen at once
        assert idx.search("quasar") == []

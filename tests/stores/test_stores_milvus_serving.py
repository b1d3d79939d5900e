"""Server-side ranking: a Milvus index answers ``bm25`` with the server's BM25 function.

Checked against the client-side BM25 of the same index (``CTXSELECT_MILVUS_SERVE=none``)
and against generations: a served search never returns a removed chunk or a row of an
uncommitted write.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from milvus_settings import served_bm25
from store_kinds import milvus_uri

import ctxselect as cs
from ctxselect.api.tune import tune_index
from ctxselect.config import FuseSpec
from ctxselect.ingest import content_hash
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.dense import DenseRetriever
from ctxselect.retrieve.fuse import fuse
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.stores import ServingStore, open_store
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus.serving import (
    SERVE_ENV,
    MilvusBM25Searcher,
    MilvusDenseSearcher,
    MilvusHybridSearcher,
)
from ctxselect.stores.milvus.store import MilvusStore
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=64, tokenizer="chars4")
TEXTS = {
    "cache": "The cache evicts the least recently used entries when memory runs low.",
    "retry": "Failed requests are retried with exponential backoff and jitter.",
    "index": "An inverted index maps each term to the documents that contain it.",
    "vector": "Dense vectors are compared by cosine similarity in an embedding space.",
    "queue": "A message queue decouples producers from consumers of events.",
    "lock": "A writer lock keeps two processes from committing at the same time.",
}
QUERIES = ["cache eviction", "retried requests", "inverted index terms", "cosine vectors"]


def _docs(texts: dict[str, str]) -> list[Document]:
    return [Document(d, t, source=d, content_hash=content_hash("", t)) for d, t in texts.items()]


@pytest.fixture
def uri(milvus_server: Any, tmp_path: Any) -> str:
    made = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), made, chunk=SPEC, bm25=served_bm25())
    return made


def _ids(hits: list[Any]) -> list[str]:
    return [h.doc_id for h in hits]


def _tied(sides: tuple[list[Any], list[Any]]) -> set[str]:
    """Chunks whose score on a side equals another chunk's there."""
    out: set[str] = set()
    for side in sides:
        scores = [round(h.score, 6) for h in side]
        out.update(h.chunk_id for h, s in zip(side, scores, strict=True) if scores.count(s) > 1)
    return out


def _rrf(sides: tuple[list[Any], list[Any]], spec: FuseSpec, k: int) -> list[tuple[str, float]]:
    """Our RRF of two hit lists (keys in chunk_id order: ties break as the store's)."""
    ids = sorted({h.chunk_id for side in sides for h in side})
    key = {c: i for i, c in enumerate(ids)}
    keyword, dense = ([(key[h.chunk_id], h.score) for h in side] for side in sides)
    # ours weighs each side by 0.5; Milvus's RRFRanker adds 1 / (k + rank) unweighted
    return [(ids[row], 2 * score) for row, score in fuse(keyword, dense, spec, k)]


def test_bm25_is_served_and_agrees_with_ours(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(uri)
    assert isinstance(store, ServingStore)
    store.close()
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("bm25"), MilvusBM25Searcher)
        served = {q: idx.search(q, 3) for q in QUERIES}
        explained = idx.explain("cache eviction", served["cache eviction"][0].chunk_id)
    monkeypatch.setenv(SERVE_ENV, "none")
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("bm25"), BM25Retriever)
        ours = {q: idx.search(q, 3) for q in QUERIES}
    for query in QUERIES:
        assert _ids(served[query])[0] == _ids(ours[query])[0], query
        assert all(h.score > 0 for h in served[query])
        scores = [h.score for h in served[query]]
        assert scores == sorted(scores, reverse=True) and [h.rank for h in served[query]] == [
            *range(1, len(scores) + 1)
        ]
        assert served[query][0].text == ours[query][0].text
    assert explained.score == pytest.approx(served["cache eviction"][0].score, rel=1e-5)
    assert "Milvus" in explained.note and explained.terms == ()


WORDS = ["apple", "banana", "cherry", "dog", "elephant", "forest", "garden", "house", "island"]


def test_served_bm25_scores_are_on_our_scale(
    milvus_server: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Milvus multiplies by (k1 + 1), ours does not: with the same tokens (no one-letter
    words, no stop words) and statistics (a full build) the scores are equal."""
    uri = milvus_uri(tmp_path, milvus_server)
    rng = np.random.default_rng(7)
    texts = {f"d{i}": " ".join(rng.choice(WORDS, size=5 + 3 * i)) for i in range(12)}
    cs.add_documents(_docs(texts), uri, chunk=SPEC, bm25=served_bm25())
    queries = ["apple", "forest garden", "cherry dog island"]
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("bm25"), MilvusBM25Searcher)
        served = {q: {h.chunk_id: h.score for h in idx.search(q, 12)} for q in queries}
        top = max(served["apple"], key=served["apple"].__getitem__)
        explained = idx.explain("apple", top).score
    monkeypatch.setenv(SERVE_ENV, "none")
    with cs.open_index(uri) as idx:
        ours = {q: {h.chunk_id: h.score for h in idx.search(q, 12)} for q in queries}
    for query in queries:
        assert served[query] == pytest.approx(ours[query], rel=1e-5), query
    assert explained == pytest.approx(ours["apple"][top], rel=1e-5)


def test_served_searches_see_one_generation(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cs.remove_documents(["cache"], uri, compact_fraction=None)
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("bm25"), MilvusBM25Searcher)
        assert "cache" not in _ids(idx.search("cache eviction memory", 10))

    def crash(self: MilvusStore, generation: int) -> None:
        raise RuntimeError("killed before the commit row")

    monkeypatch.setattr(MilvusStore, "_flip", crash)
    extra = {"ghost": "Eviction of ghost cache entries never committed."}
    with pytest.raises(RuntimeError):
        cs.add_documents(_docs(extra), uri, compact_fraction=None)
    monkeypatch.undo()
    with cs.open_index(uri) as idx:
        hits = idx.search("ghost cache entries retried requests", 10)
        assert "ghost" not in _ids(hits) and hits  # the leftover rows are never returned
        cs.add_documents(_docs({"cache": TEXTS["cache"]}), uri, compact_fraction=None)
        assert _ids(idx.search("cache eviction", 1)) == ["cache"]  # reloads the generation


def test_an_index_with_other_bm25_settings_is_ranked_client_side(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, bm25=served_bm25(k1=1.2))
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("bm25"), BM25Retriever)
        assert _ids(idx.search("cache eviction", 1)) == ["cache"]


OPTIONS = [f.name for f in dataclasses.fields(cs.BM25Params) if f.name not in ms.DEFAULT_BM25]


@pytest.mark.parametrize("option", OPTIONS)
def test_an_analysis_option_milvus_lacks_is_ranked_client_side(
    milvus_server: Any, tmp_path: Any, option: str
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, bm25=served_bm25(**{option: True}))
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("bm25"), BM25Retriever)
        assert _ids(idx.search("cache eviction", 1)) == ["cache"]


def test_dense_is_served_exactly_and_hybrid_is_fused_by_the_server(
    milvus_server: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, embedder="hash", bm25=served_bm25())
    more = {"extra": "Cosine similarity of embedding vectors ranks dense retrieval."}
    cs.add_documents(_docs(more), uri, compact_fraction=None)  # a delta's vectors too
    cs.remove_documents(["vector"], uri, compact_fraction=None)
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("dense"), MilvusDenseSearcher)
        served = {q: idx.search(q, 5, mode="dense") for q in QUERIES}
        assert isinstance(idx.retriever("hybrid"), MilvusHybridSearcher)
        hybrid = {q: idx.search(q, 5, mode="hybrid") for q in QUERIES}
        assert idx.search_many({q: q for q in QUERIES}, 5, "hybrid") == hybrid  # batched
        served_sides = {
            q: (idx.search(q, 100, mode="bm25"), idx.search(q, 100, mode="dense")) for q in QUERIES
        }
        fused = idx.explain(QUERIES[0], hybrid[QUERIES[0]][0].chunk_id, mode="hybrid")
        assert fused.score == pytest.approx(hybrid[QUERIES[0]][0].score, rel=1e-6)
        assert "RRF k=60" in fused.note
        explained = idx.explain(QUERIES[0], served[QUERIES[0]][0].chunk_id, mode="dense")
        ids = [h.chunk_id for h in served[QUERIES[0]]]
        served_vectors = idx.retriever("dense").vectors_of(ids)  # type: ignore[attr-defined]
        diverse = idx.rank(QUERIES[0], 5, "dense", mmr=0.5)
    monkeypatch.setenv(SERVE_ENV, "none")
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("dense"), DenseRetriever)
        ours = {q: idx.search(q, 5, mode="dense") for q in QUERIES}
        ours_hybrid_retriever = idx.retriever("hybrid")
        ours_vectors = idx.retriever("dense").vectors_of(ids)  # type: ignore[attr-defined]
        assert idx.rank(QUERIES[0], 5, "dense", mmr=0.5) == diverse
    assert np.allclose(served_vectors, ours_vectors, atol=1e-6)
    for query in QUERIES:
        assert [h.chunk_id for h in served[query]] == [h.chunk_id for h in ours[query]]
        for mine, theirs in zip(served[query], ours[query], strict=True):
            assert mine.score == pytest.approx(theirs.score, abs=1e-5)
        assert "vector" not in _ids(served[query])
        assert "vector" not in _ids(hybrid[query]) and hybrid[query]
        assert isinstance(ours_hybrid_retriever, HybridRetriever)
    for query in QUERIES:  # RRF of the served sides, computed here, is what the server fused
        expected = _rrf(served_sides[query], FuseSpec(), 5)
        assert [h.score for h in hybrid[query]] == pytest.approx([s for _, s in expected])
        tied = _tied(served_sides[query])  # ranked within a tie in the server's order
        for hit, (chunk_id, _) in zip(hybrid[query], expected, strict=True):
            assert hit.chunk_id == chunk_id or {hit.chunk_id, chunk_id} <= tied, query
    assert explained.score == pytest.approx(served[QUERIES[0]][0].score, abs=1e-6)


@pytest.mark.parametrize(
    "fusion",
    [FuseSpec(weight=0.3), FuseSpec(method="convex", norm="zscore"), FuseSpec(k=60.5)],
    ids=["weighted-rrf", "convex", "fractional-k"],
)
def test_fusions_milvus_lacks_stay_client_side(
    milvus_server: Any, tmp_path: Any, fusion: FuseSpec
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, embedder="hash", bm25=served_bm25())
    with cs.open_index(uri) as idx:
        assert isinstance(idx.retriever("hybrid"), MilvusHybridSearcher)
    store = open_store(uri)
    try:
        with store.lock():
            store.commit_settings({"fusion": dataclasses.asdict(fusion)})
    finally:
        store.close()
    with cs.open_index(uri) as idx:
        hybrid = idx.retriever("hybrid")
        assert isinstance(hybrid, HybridRetriever) and hybrid.spec == fusion
        assert isinstance(idx.retriever("dense"), MilvusDenseSearcher)
        assert _ids(idx.search("cache eviction", 1, mode="hybrid")) == ["cache"]


def test_tune_reads_the_client_side_fusion_of_a_served_index(
    milvus_server: Any, tmp_path: Any
) -> None:
    uri = milvus_uri(tmp_path, milvus_server)
    cs.add_documents(_docs(TEXTS), uri, chunk=SPEC, embedder="hash", bm25=served_bm25())
    queries, qrels = tmp_path / "q.jsonl", tmp_path / "qrels.tsv"
    picked = dict(zip(QUERIES, ["cache", "retry", "index", "vector"], strict=True))
    queries.write_text("".join(f'{{"_id": "q{i}", "text": "{q}"}}\n' for i, q in enumerate(picked)))
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"q{i}\t{d}\t1\n" for i, d in enumerate(picked.values()))
    )
    report = tune_index(uri, queries, qrels, folds=2, write=False, calibrate=False)
    assert report.spec.method in {"rrf", "convex"} and report.index == uri

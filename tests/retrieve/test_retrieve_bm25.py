"""BM25 (Lucene variant): hand-computed scores, analysis switches, ties, persistence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.config import BM25Params
from ctxselect.errors import ConfigError, IndexCorruptError, IndexMismatchError, NotFoundError
from ctxselect.retrieve import MODES, BM25Retriever, Retriever
from ctxselect.retrieve.analyze import BM25Analyzer
from ctxselect.types import Chunk, ChunkTable, Hit

PLAIN = {"stem": False, "stopwords": False}


def make_table(texts: list[str], headers: list[str] | None = None) -> ChunkTable:
    headers = headers or [""] * len(texts)
    chunks = [
        Chunk(f"d{i}#0", f"d{i}", i, 10, 10 + len(t), t, header=h, n_tokens=len(t.split()))
        for i, (t, h) in enumerate(zip(texts, headers, strict=True))
    ]
    return ChunkTable.from_chunks(chunks)


TINY = ["apple banana apple", "banana cherry", "cherry date elderberry fig"]


def test_score_by_hand() -> None:
    retriever = BM25Retriever.build(make_table(TINY), **PLAIN)
    # N = 3, lengths 3, 2, 4 -> avgdl 3; k1 = 1.5, b = 0.75
    (hit,) = retriever.search("apple")
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    assert hit.chunk_id == "d0#0"
    assert hit.score == pytest.approx(idf * 2 / (2 + 1.5 * (0.25 + 0.75 * 3 / 3)), rel=1e-6)
    scores = {h.chunk_id: h.score for h in retriever.search("banana cherry")}
    idf2 = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    norm1 = 1.5 * (0.25 + 0.75 * 2 / 3)
    assert scores["d1#0"] == pytest.approx(2 * idf2 / (1 + norm1), rel=1e-6)
    assert isinstance(hit.score, float)


def test_explain_adds_up_to_exactly_the_search_score() -> None:
    texts = [
        "the quick brown fox jumps over the lazy dog",
        "a fox and a dog are friends; the foxes run",
        "brown dogs sleep all day, lazy lazy dogs",
        "nothing relevant here at all",
    ]
    retriever = BM25Retriever.build(make_table(texts))
    for query in ("lazy fox", "brown dog dog fox", "foxes running", "lazy"):
        for hit in retriever.search(query, k=10):
            explanation = retriever.explain(query, hit.chunk_id)
            assert explanation.score == hit.score
            total = 0.0
            for term in explanation.terms:
                total += term.contribution
            assert total == hit.score
            assert explanation.mode == "bm25"
    explanation = retriever.explain("brown dog dog fox", "d0#0")
    assert [t.term for t in explanation.terms] == ["brown", "dog", "fox"]
    dog = explanation.terms[1]
    assert dog.df == 3 and dog.tf == 1  # "dogs" stems to "dog" too
    assert dog.idf == pytest.approx(math.log(1 + (4 - 3 + 0.5) / (3 + 0.5)))
    assert "k1=1.5" in explanation.note


def test_repeated_query_word_counts_once_per_occurrence() -> None:
    retriever = BM25Retriever.build(make_table(TINY), **PLAIN)
    once = retriever.search("apple")[0].score
    assert retriever.search("apple apple")[0].score == 2 * once
    assert retriever.explain("apple apple", "d0#0").terms[0].contribution == 2 * once


def test_stemming_switch() -> None:
    table = make_table(["the runner runs daily", "walking slowly"])
    stemmed = BM25Retriever.build(table)
    plain = BM25Retriever.build(table, stem=False)
    assert [h.chunk_id for h in stemmed.search("running run")] == ["d0#0"]
    assert stemmed.search("walks")[0].chunk_id == "d1#0"
    assert plain.search("walks") == []
    assert [h.chunk_id for h in plain.search("runs")] == ["d0#0"]


def test_stopword_switch() -> None:
    table = make_table(["the cat is on the mat", "a dog"])
    with_stop = BM25Retriever.build(table)
    without = BM25Retriever.build(table, stopwords=False)
    assert with_stop.search("the is on") == []
    assert [h.chunk_id for h in without.search("the is on")] == ["d0#0"]
    assert BM25Analyzer().terms("The cats AND the dogs") == ["cat", "dog"]
    assert BM25Analyzer(stem=False).terms("The cats AND the dogs") == ["cats", "dogs"]


def test_analysis_follows_bm25s() -> None:
    analyzer = BM25Analyzer(stem=False, stopwords=False)
    assert analyzer.words("X-ray of CO2 in Café_au lait, a b 42") == [
        "ray",
        "of",
        "co2",
        "in",
        "café_au",
        "lait",
        "42",
    ]


def test_ties_break_by_chunk_id_even_at_the_kth_place() -> None:
    texts = ["other words", "same text here", "same text here", "same text here", "same text"]
    retriever = BM25Retriever.build(make_table(texts), **PLAIN)
    hits = retriever.search("same text here", k=2)
    assert [h.chunk_id for h in hits] == ["d1#0", "d2#0"]
    assert hits[0].score == hits[1].score
    hits = retriever.search("here", k=2)
    assert [h.chunk_id for h in hits] == ["d1#0", "d2#0"]
    assert [h.chunk_id for h in retriever.search("same", k=10)][:3] == ["d4#0", "d1#0", "d2#0"]


def test_hits_carry_chunk_metadata() -> None:
    retriever = BM25Retriever.build(make_table(TINY, headers=["Fruit", "", "Tree"]))
    (hit,) = retriever.search("fruit")
    assert hit == Hit(1, "d0#0", "d0", hit.score, 10, 10 + len(TINY[0]), 3, TINY[0], "Fruit")


def test_k_handling() -> None:
    retriever = BM25Retriever.build(make_table(TINY), **PLAIN)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="k"):
            retriever.search("apple", k=bad)
        with pytest.raises(ConfigError):
            retriever.search_many({"q": "apple"}, k=bad)
    assert len(retriever.search("banana cherry", k=1)) == 1
    assert len(retriever.search("banana cherry", k=100)) == 3


def test_zero_scores_are_not_returned() -> None:
    retriever = BM25Retriever.build(make_table(TINY), **PLAIN)
    assert [h.chunk_id for h in retriever.search("fig", k=10)] == ["d2#0"]
    assert retriever.explain("fig", "d0#0").score == 0.0
    assert retriever.search("") == []
    assert retriever.search("   ?! ") == []
    assert retriever.search("unknownword") == []


def test_search_many_matches_search() -> None:
    retriever = BM25Retriever.build(make_table(TINY), **PLAIN)
    queries = {"q1": "apple", "q2": "banana cherry fig", "q3": "", "q4": "nothing"}
    assert retriever.search_many(queries, k=2) == {
        qid: retriever.search(q, k=2) for qid, q in queries.items()
    }


def test_unknown_chunk_id() -> None:
    retriever = BM25Retriever.build(make_table(TINY))
    with pytest.raises(NotFoundError, match="'missing#0' is not in this index") as info:
        retriever.explain("apple", "missing#0")
    assert isinstance(info.value, KeyError)


def test_arrays_load_round_trip() -> None:
    table = make_table([*TINY, "apple pie with cherry", "date night"])
    built = BM25Retriever.build(table)
    arrays = {name: np.array(a) for name, a in built.arrays().items()}
    assert all(a.dtype.kind != "O" for a in arrays.values())
    assert arrays["weights"].dtype == np.float32
    loaded = BM25Retriever.load(table, arrays)
    queries = {"a": "apple cherry", "b": "date", "c": "elderberry fig pie"}
    for query in queries.values():
        assert loaded.search(query) == built.search(query)
        assert loaded.explain(query, "d3#0") == built.explain(query, "d3#0")
    assert loaded.search_many(queries) == built.search_many(queries)


def test_load_recomputes_weights_for_new_k1_b_and_refuses_new_analysis() -> None:
    table = make_table([*TINY, "apple pie with cherry"])
    arrays = BM25Retriever.build(table).arrays()
    params = BM25Params(k1=0.9, b=0.4)
    assert BM25Retriever.load(table, arrays, params=params).search("apple cherry") == (
        BM25Retriever.build(table, params=params).search("apple cherry")
    )
    with pytest.raises(IndexMismatchError, match="rebuild"):
        BM25Retriever.load(table, arrays, stem=False)
    with pytest.raises(IndexMismatchError, match="chunk table has 2"):
        BM25Retriever.load(make_table(TINY[:2]), arrays)
    broken = {name: a for name, a in arrays.items() if name != "weights"}
    with pytest.raises(IndexCorruptError, match="weights"):
        BM25Retriever.load(table, broken)
    out_of_range = {**arrays, "rows": arrays["rows"] + len(table)}
    with pytest.raises(IndexCorruptError, match="do not match"):
        BM25Retriever.load(table, out_of_range)


def test_params_and_registry() -> None:
    assert MODES.get("bm25").retriever is BM25Retriever
    table = make_table(TINY)
    assert isinstance(BM25Retriever.build(table), Retriever)
    assert BM25Retriever.build(table, params=BM25Params(k1=1.2), b=0.5).params == BM25Params(
        k1=1.2, b=0.5
    )
    with pytest.raises(ConfigError, match="unknown BM25 parameter"):
        BM25Retriever.build(table, k3=1.0)
    with pytest.raises(ConfigError, match="b must be"):
        BM25Retriever.build(table, b=2.0)


def test_empty_table() -> None:
    retriever = BM25Retriever.build(make_table([]))
    assert retriever.search("apple") == []
    assert BM25Retriever.load(make_table([]), retriever.arrays()).search("x") == []


WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "the", "epsilon"])
TEXTS = st.lists(st.lists(WORDS, max_size=10).map(" ".join), min_size=1, max_size=10)


@settings(max_examples=60, deadline=None)
@given(
    texts=TEXTS,
    query=st.lists(WORDS, min_size=1, max_size=5).map(" ".join),
    k=st.integers(1, 12),
)
def test_property_ranking_and_explanations(texts: list[str], query: str, k: int) -> None:
    table = make_table(texts)
    retriever = BM25Retriever.build(table)
    hits = retriever.search(query, k=k)
    every = {cid: retriever.explain(query, cid).score for cid in table.chunk_ids}
    expected = sorted((cid for cid, s in every.items() if s > 0), key=lambda c: (-every[c], c))
    assert [h.chunk_id for h in hits] == expected[:k]
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(h.score == every[h.chunk_id] for h in hits)

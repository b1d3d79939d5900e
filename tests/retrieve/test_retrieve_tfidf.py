"""TF-IDF retrievers: the chapter's words, idf = ln(N/df), cosine and plain-sum scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.errors import ConfigError, NotFoundError
from ctxselect.retrieve import MODES, TfidfRetriever, TfidfSumRetriever
from ctxselect.retrieve.analyze import TfidfAnalyzer
from ctxselect.types import Chunk, ChunkTable


def make_table(texts: list[str]) -> ChunkTable:
    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t) for i, t in enumerate(texts)]
    return ChunkTable.from_chunks(chunks)


def test_words_are_lowercase_runs_of_three_or_more_letters() -> None:
    words = TfidfAnalyzer().words("It's an X-ray of 3D objects, Résumé and CACHE_lines")
    assert words == ["ray", "objects", "sum", "and", "cache", "lines"]


def test_cosine_by_hand() -> None:
    retriever = TfidfRetriever.build(make_table(["apple banana", "apple cherry cherry", "date"]))
    hits = retriever.search("banana apple", k=10)
    assert [h.chunk_id for h in hits] == ["d0#0", "d1#0"]
    a, b = math.log(3 / 2), math.log(3)  # idf of apple (df 2), of banana and cherry (df 1)
    # d0 = (a, b) points exactly along the query vector (a, b)
    assert hits[0].score == pytest.approx(1.0, rel=1e-6)
    expected = (a * a) / (math.hypot(a, b) * math.hypot(a, 2 * b))
    assert hits[1].score == pytest.approx(expected, rel=1e-6)


def test_cosine_explain_adds_up_to_the_score() -> None:
    retriever = TfidfRetriever.build(make_table(["apple banana", "apple cherry cherry", "date"]))
    explanation = retriever.explain("banana apple apple", "d1#0")
    assert [t.term for t in explanation.terms] == ["banana", "apple"]
    hits = {h.chunk_id: h.score for h in retriever.search("banana apple apple")}
    assert explanation.score == hits["d1#0"]
    assert explanation.terms[0].contribution == 0.0
    assert explanation.terms[1].tf == 1 and explanation.terms[1].df == 2
    assert explanation.terms[1].idf == pytest.approx(math.log(1.5))


def test_plain_sum_by_hand() -> None:
    retriever = TfidfSumRetriever.build(make_table(["apple banana", "apple cherry cherry", "date"]))
    hits = retriever.search("cherry apple")
    scores = {h.chunk_id: h.score for h in hits}
    assert scores["d1#0"] == pytest.approx(2 / 3 * math.log(3) + 1 / 3 * math.log(1.5), rel=1e-6)
    assert scores["d0#0"] == pytest.approx(1 / 2 * math.log(1.5), rel=1e-6)
    # a repeated query word counts once
    assert retriever.search("cherry cherry apple") == hits


def test_a_word_in_every_chunk_has_idf_zero_and_matches_nothing() -> None:
    for cls in (TfidfRetriever, TfidfSumRetriever):
        retriever = cls.build(make_table(["the cat", "the dog", "the owl"]))
        assert retriever.search("the") == []
        assert retriever.explain("the", "d0#0").terms[0].idf == 0.0


def test_empty_and_unknown_queries_return_no_hits() -> None:
    retriever = TfidfRetriever.build(make_table(["apple banana", "cherry"]))
    assert retriever.search("") == []
    assert retriever.search("zz 12 unknownword") == []
    explanation = retriever.explain("unknownword apple", "d0#0")
    assert explanation.terms[0].df == 0 and explanation.terms[0].contribution == 0.0


def test_registered_modes_and_errors() -> None:
    assert MODES.get("tfidf").retriever is TfidfRetriever
    assert MODES.get("tfidf-sum").retriever is TfidfSumRetriever
    table = make_table(["apple banana", "cherry"])
    with pytest.raises(ConfigError, match="takes no parameters"):
        TfidfRetriever.build(table, k1=1.2)
    retriever = TfidfSumRetriever.build(table)
    with pytest.raises(ConfigError, match="k"):
        retriever.search("apple", k=0)
    with pytest.raises(NotFoundError, match="nope#0"):
        retriever.explain("apple", "nope#0")


def test_arrays_round_trip() -> None:
    table = make_table(["apple banana apple", "banana cherry", "cherry date", "fig"])
    for cls in (TfidfRetriever, TfidfSumRetriever):
        built = cls.build(table)
        arrays = {name: np.array(a) for name, a in built.arrays().items()}
        assert all(a.dtype.kind != "O" for a in arrays.values())
        loaded = cls.load(table, arrays)
        for query in ("apple", "banana cherry", "date fig apple"):
            assert loaded.search(query) == built.search(query)


WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])
TEXTS = st.lists(st.lists(WORDS, max_size=8).map(" ".join), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(texts=TEXTS, query=st.lists(WORDS, min_size=1, max_size=4).map(" ".join))
def test_property_explain_matches_search(texts: list[str], query: str) -> None:
    table = make_table(texts)
    for cls in (TfidfRetriever, TfidfSumRetriever):
        retriever = cls.build(table)
        hits = retriever.search(query, k=len(texts))
        keys = [(-h.score, h.chunk_id) for h in hits]
        assert keys == sorted(keys)
        assert all(h.score > 0 for h in hits)
        scores = {h.chunk_id: h.score for h in hits}
        for chunk_id in table.chunk_ids:
            assert retriever.explain(query, chunk_id).score == scores.get(chunk_id, 0.0)

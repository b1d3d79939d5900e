"""The chapter's five-note example with the plain TF-IDF sum ("tfidf-sum")."""

from __future__ import annotations

import math

import pytest

from _support.five_notes import NOTES, QUERY, five_notes_table
from ctxselect.retrieve.modes import build_mode


@pytest.fixture(scope="module")
def retriever():
    return build_mode(five_notes_table(), "tfidf-sum")


def test_idf_of_each_query_word(retriever) -> None:
    explanation = retriever.explain(QUERY, "note2#0")
    idf = {t.term: t.idf for t in explanation.terms}
    assert [t.term for t in explanation.terms] == ["reset", "synchronizer", "metastability"]
    assert idf["reset"] == pytest.approx(math.log(5 / 2)) == pytest.approx(0.916, abs=5e-4)
    assert idf["synchronizer"] == pytest.approx(math.log(5 / 2))
    assert idf["metastability"] == pytest.approx(math.log(5)) == pytest.approx(1.609, abs=5e-4)
    assert {t.term: t.df for t in explanation.terms} == {
        "reset": 2,
        "synchronizer": 2,
        "metastability": 1,
    }


def test_note2_ranks_first_and_above_notes_4_and_5(retriever) -> None:
    hits = retriever.search(QUERY, k=5)
    assert [h.doc_id for h in hits] == ["note2", "note4", "note5"]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].score > hits[1].score
    assert hits[0].score > hits[2].score
    # note 2 has 11 words: (ln 2.5 + ln 2.5 + ln 5) / 11
    expected = (2 * math.log(2.5) + math.log(5)) / 11
    assert hits[0].score == pytest.approx(expected, rel=1e-6)
    # notes 4 and 5 both have 11 words and one query word: an exact tie, broken by chunk_id
    assert hits[1].score == hits[2].score == pytest.approx(math.log(2.5) / 11, rel=1e-6)
    assert hits[0].text == NOTES["note2"]


def test_notes_without_query_words_score_exactly_zero(retriever) -> None:
    returned = {h.doc_id for h in retriever.search(QUERY, k=10)}
    for note in ("note1", "note3"):
        explanation = retriever.explain(QUERY, f"{note}#0")
        assert explanation.score == 0.0
        assert all(t.contribution == 0.0 and t.tf == 0 for t in explanation.terms)
        assert note not in returned


def test_explanations_add_up_to_the_search_scores(retriever) -> None:
    for hit in retriever.search(QUERY, k=5):
        explanation = retriever.explain(QUERY, hit.chunk_id)
        assert explanation.score == hit.score
        assert sum(t.contribution for t in explanation.terms) == pytest.approx(hit.score)
        assert explanation.mode == "tfidf-sum"


def test_the_cosine_scorer_ranks_note2_first_too() -> None:
    retriever = build_mode(five_notes_table(), "tfidf")
    hits = retriever.search(QUERY, k=5)
    assert hits[0].doc_id == "note2"
    assert {h.doc_id for h in hits} == {"note2", "note4", "note5"}

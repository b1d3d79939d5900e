"""On a calibrated index every search verb gives the same P(relevant) for the same chunk."""

from __future__ import annotations

import pytest

from _support.stopping_corpus import TOPICS, calibrated_folder
from ctxselect import api


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> api.Index:
    index = api.open_index(calibrated_folder(tmp_path_factory.mktemp("calibrated")))
    assert index.calibration() is not None
    return index


QUERIES = {f"q{i}": f"topic{i}word marker{i} context budget" for i in range(TOPICS)}


@pytest.mark.parametrize("mode", [None, "dense", "hybrid"])
@pytest.mark.parametrize("k", [3, 10])
def test_search_many_gives_what_search_gives_p_included(calibrated, mode, k):
    many = calibrated.search_many(QUERIES, k, mode)
    for qid, query in QUERIES.items():
        one = calibrated.search(query, k, mode)
        assert many[qid] == one
        assert all(h.p_relevant is not None for h in one)


@pytest.mark.parametrize("mode", [None, "dense"])
def test_explain_of_a_chunk_id_gives_the_p_explain_top_gives(calibrated, mode):
    query = QUERIES["q3"]
    for top in calibrated.explain_top(query, 3, mode):
        alone = calibrated.explain(query, top.chunk_id, mode)
        assert top.p_relevant is not None and alone.p_relevant == top.p_relevant
        assert alone.score == top.score and alone.terms == top.terms


def test_explain_of_a_chunk_the_query_does_not_match_has_no_p(calibrated):
    hits = calibrated.search("marker5", 1)
    assert hits and hits[0].p_relevant is not None
    other = calibrated.search("marker6", 1)[0].chunk_id
    assert calibrated.explain("marker5", other).p_relevant is None

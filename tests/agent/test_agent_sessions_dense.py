"""Sessions with mmr and promotion: promoted sections count as received, chunk by chunk."""

from __future__ import annotations

import pytest

from _support.sessions_corpus import ALPHA, OLDEST, WEATHER, write_guide
from ctxselect import agent, api
from ctxselect.config import ChunkSpec
from ctxselect.errors import ConfigError

SECTION = ("guide.md#1", "guide.md#2", "guide.md#3")
QUERY = "alpha cache entries"


@pytest.fixture
def service(tmp_path):
    corpus = write_guide(tmp_path / "corpus")
    folder = tmp_path / "ix"
    api.index_paths([corpus], folder, chunk=ChunkSpec(chunker="markdown", size=40),
                    embedder="hash")  # fmt: skip
    opened = agent.Sessions.open(folder)
    yield opened
    opened.close()


def test_promoted_section_is_sent_whole_and_every_chunk_counts_as_received(service):
    first = service.select("s", QUERY, 300, mmr=0.5, promote=True, stop="none")
    [piece] = [p for p in first.pieces if p.doc_id == "guide.md"]
    assert piece.chunk_ids == SECTION
    assert all(s.strip() in piece.text for s in (ALPHA, WEATHER, OLDEST))
    assert first.tokens_used <= first.budget
    # The middle chunk was never a hit for QUERY: it counts as received through the section.
    again = service.select("s", "weather report clouds rain", 300, stop="none")
    assert [r.chunk_id for r in again.references] == ["guide.md#2"]
    assert not any("guide.md#2" in p.chunk_ids for p in again.pieces)
    assert "guide.md#2" not in {c for p in again.pieces for c in p.chunk_ids}


def test_a_section_holding_a_received_chunk_is_not_promoted(service):
    weather = service.select("s", "weather report clouds rain", 100, stop="none")
    assert {c for p in weather.pieces for c in p.chunk_ids} == {"guide.md#2"}
    later = service.select("s", QUERY, 300, promote=True, stop="none")
    ids = [p.chunk_ids for p in later.pieces if p.doc_id == "guide.md"]
    assert sorted(ids) == [("guide.md#1",), ("guide.md#3",)]  # as packed, no resend
    assert not any(WEATHER.strip() in p.text for p in later.pieces)
    assert later.tokens_used == sum(p.tokens for p in later.pieces) + sum(
        r.tokens for r in later.references
    )
    fresh = service.select("other", QUERY, 300, promote=True, stop="none")
    assert [p.chunk_ids for p in fresh.pieces if p.doc_id == "guide.md"] == [SECTION]


def test_without_promote_the_gap_stays(service):
    result = service.select(None, QUERY, 300, mmr=0.5, stop="none")
    ids = {c for p in result.pieces for c in p.chunk_ids}
    assert {"guide.md#1", "guide.md#3"} <= ids and "guide.md#2" not in ids


def test_mmr_reorders_like_the_index(service):
    hits = service.index.rank(QUERY, service.index.depth(300), None, mmr=0.2)
    result = service.select(None, QUERY, 300, mmr=0.2, detail="ids")
    order = [h.chunk_id for h in hits]
    firsts = [p.chunk_ids[0] for p in result.pieces]
    assert firsts == sorted(firsts, key=order.index)  # pieces follow the MMR order


@pytest.mark.parametrize("value", [-0.5, 1.01, True])
def test_bad_mmr(service, value):
    with pytest.raises(ConfigError, match="mmr must be a number from 0 to 1"):
        service.select(None, QUERY, 300, mmr=value)


def test_mmr_needs_dense_vectors(tmp_path):
    corpus = write_guide(tmp_path / "corpus")
    api.index_paths([corpus], tmp_path / "kw")
    service = agent.Sessions.open(tmp_path / "kw")
    try:
        with pytest.raises(ConfigError, match="dense vectors"):
            service.select(None, QUERY, 300, mmr=0.5)
        assert service.select(None, QUERY, 300, promote=True).pieces  # no dense needed
    finally:
        service.close()


def test_full_detail_does_not_widen_over_a_received_chunk(service):
    fresh = service.select("other", QUERY, 300, detail="full")
    assert any(WEATHER.strip() in p.text for p in fresh.pieces)  # widened to the section
    service.select("s", "weather report clouds rain", 100)
    later = service.select("s", QUERY, 300, detail="full")
    assert later.pieces and not any(WEATHER.strip() in p.text for p in later.pieces)

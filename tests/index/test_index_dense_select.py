"""Index.select and Index.rank over a stored dense index: MMR and parent promotion."""

from __future__ import annotations

import pytest

import ctxselect as cs
from ctxselect.errors import ConfigError

GUIDE = """# Guide

## Reset

Hold the reset line low for ten cycles after power comes up.

The reset synchronizer removes metastability from the reset release.

Release the reset on a clock edge so every flop leaves reset together.

## Clocks

Clock gating saves dynamic power in large designs.

Timing closure depends on careful floorplanning and placement.
"""
RESET = ("g.md#1", "g.md#2", "g.md#3")  # the chunks of the Reset section


@pytest.fixture
def near_duplicates(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("dup1", "dup2", "dup3"):
        (root / f"{name}.txt").write_text("apple banana cherry date", encoding="utf-8")
    (root / "other.txt").write_text("apple banana kiwi lemon", encoding="utf-8")
    (root / "far.txt").write_text("mango iris jade honey", encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, embedder="hash")
    return ix


def test_mmr_moves_near_duplicates_down(near_duplicates) -> None:
    with cs.open_index(near_duplicates) as idx:
        plain = [h.doc_id for h in idx.rank("apple banana cherry", 5, "dense")]
        assert plain[:3] == ["dup1.txt", "dup2.txt", "dup3.txt"]
        assert [h.doc_id for h in idx.rank("apple banana cherry", 5, "dense", mmr=1.0)] == plain
        diverse = idx.rank("apple banana cherry", 5, "dense", mmr=0.3)
        assert diverse[0].doc_id == "dup1.txt" and not diverse[1].doc_id.startswith("dup")
        assert sorted(h.doc_id for h in diverse) == sorted(plain)
        assert [h.rank for h in diverse] == [1, 2, 3, 4, 5]
        ranked = idx.rank("apple banana cherry", idx.depth(40), "hybrid", mmr=0.3)
        chosen = idx.select_ranked(ranked, 40, mode="hybrid")  # below select's 100 tokens
        assert not chosen.chunks[1].doc_id.startswith("dup") and chosen.tokens_used <= 40
        with pytest.raises(ConfigError, match="MMR lambda must be from 0 to 1"):
            idx.rank("apple", 3, "dense", mmr=1.5)


@pytest.fixture
def guide(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "g.md").write_text(GUIDE, encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([root], ix, chunk=cs.ChunkSpec(chunker="markdown", size=20), embedder="hash")
    return ix


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_promote_sends_the_section_within_the_budget(guide, mode) -> None:
    with cs.open_index(guide) as idx:
        plain = idx.select("reset synchronizer release", 150, mode=mode, k=3, stop="none")
        assert {c for p in plain.chunks for c in p.chunk_ids} >= set(RESET[1:])
        promoted = idx.select(
            "reset synchronizer release", 150, mode=mode, k=3, promote=True, stop="none"
        )
        section = [p for p in promoted.chunks if len(p.chunk_ids) > 1]
        assert len(section) == 1 and section[0].chunk_ids == RESET
        assert section[0].text == idx.span_text("g.md", section[0].start, section[0].end)
        assert section[0].text.startswith("## Reset") and promoted.tokens_used <= 150
        for budget in range(10, 160, 7):
            ranked = idx.rank("reset synchronizer release", idx.depth(budget), mode)
            chosen = idx.select_ranked(ranked, budget, mode=mode, promote=True)
            assert chosen.tokens_used <= budget
            assert sum(p.tokens for p in chosen.chunks) == chosen.tokens_used

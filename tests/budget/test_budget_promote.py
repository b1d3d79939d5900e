"""Parent promotion: enough selected children of a section become the whole section."""

from __future__ import annotations

import pytest
from budget_helpers import COUNTER

from ctxselect.budget import make_packer, render
from ctxselect.budget.promote import parse_parent, promote_parents
from ctxselect.errors import ConfigError, InputError
from ctxselect.types import Hit

# One document: an intro line, then a section of three paragraphs, then an outro.
INTRO = "Intro line about clocks.\n\n"
SECTION = (
    "Reset must be synchronised.\n\n" + "Hold reset low for ten cycles. " * 20 + "\n\n"
    "Release reset on a clock edge.\n\n"
)
DOC = INTRO + SECTION + "Outro about power."
S, E = len(INTRO), len(INTRO) + len(SECTION)
PARENT = f"guide@{S}:{E}"


def _children() -> list[tuple[str, int, int]]:
    spans, start = [], S
    for i, para in enumerate(SECTION.split("\n\n")[:3], 1):
        spans.append((f"guide#{i}", start, start + len(para)))
        start += len(para) + 2
    return spans


PARENT_OF = {"guide#0": f"guide@0:{len(DOC)}", **{cid: PARENT for cid, _, _ in _children()}}


def span_text(doc_id: str, start: int, end: int) -> str:
    assert doc_id == "guide"
    return DOC[start:end]


def _hit(rank: int, chunk_id: str, start: int, end: int) -> Hit:
    return Hit(rank, chunk_id, "guide", 1.0 / rank, start, end, 0, DOC[start:end], "Guide > Reset")


def _selection(ids: list[str], budget: int = 1000):
    spans = {cid: (s, e) for cid, s, e in _children()}
    hits = [_hit(r, cid, *spans[cid]) for r, cid in enumerate(ids, 1)]
    return make_packer("skip", COUNTER, merge=False).pack(hits, budget)


def test_two_of_three_children_become_the_section() -> None:
    selection = _selection(["guide#1", "guide#3"])
    promoted = promote_parents(selection, PARENT_OF, span_text, COUNTER)
    assert len(promoted.chunks) == 1
    piece = promoted.chunks[0]
    assert (piece.start, piece.end, piece.text) == (S, E, SECTION)
    assert piece.chunk_ids == ("guide#1", "guide#2", "guide#3")
    assert promoted.tokens_used == sum(c.tokens for c in promoted.chunks) <= promoted.budget
    assert COUNTER.count(render(promoted)) == promoted.tokens_used


def test_not_promoted_when_the_section_does_not_fit() -> None:
    selection = _selection(["guide#1", "guide#3"])
    section_cost = promote_parents(selection, PARENT_OF, span_text, COUNTER).tokens_used
    assert section_cost > selection.tokens_used  # the unselected middle is long
    tight = _selection(["guide#1", "guide#3"], budget=section_cost - 1)
    assert promote_parents(tight, PARENT_OF, span_text, COUNTER) is tight


def test_thresholds_decide() -> None:
    one = _selection(["guide#2"])
    assert promote_parents(one, PARENT_OF, span_text, COUNTER) is one
    lenient = promote_parents(one, PARENT_OF, span_text, COUNTER, min_children=1, min_share=0.3)
    assert lenient.chunks[0].text == SECTION
    two = _selection(["guide#1", "guide#2"])
    assert promote_parents(two, PARENT_OF, span_text, COUNTER, min_share=0.9) is two


def test_dropped_children_inside_the_section_leave_dropped() -> None:
    spans = {cid: (s, e) for cid, s, e in _children()}
    hits = [_hit(r, cid, *spans[cid]) for r, cid in enumerate(["guide#1", "guide#3", "guide#1"], 1)]
    selection = make_packer("skip", COUNTER, merge=False).pack(hits, 1000)
    assert [d.chunk_id for d in selection.dropped] == ["guide#1"]  # the duplicate
    promoted = promote_parents(selection, PARENT_OF, span_text, COUNTER)
    assert promoted.dropped == ()


def test_bad_arguments() -> None:
    selection = _selection(["guide#1"])
    with pytest.raises(ConfigError):
        promote_parents(selection, PARENT_OF, span_text, COUNTER, min_children=0)
    with pytest.raises(ConfigError):
        promote_parents(selection, PARENT_OF, span_text, COUNTER, min_share=2.0)
    with pytest.raises(InputError, match="doc_id@start:end"):
        parse_parent("guide:1-2")
    assert parse_parent("a@b@3:9") == ("a@b", 3, 9)

"""Property tests: random hits over a few documents, both packers, every format.

Hits are drawn as adjacent runs (cut points) plus random overlapping spans, in random
order with repeats; budgets include 0.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from budget_helpers import COUNTER
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.budget import frame, make_packer, render, render_chunk
from ctxselect.budget.packers import GREEDY_STOPPED
from ctxselect.types import Hit, Selection

FORMATS = ["markdown", "xml", "json"]
_PARTS = [*"ab .,;!'\"<>&\n\t#é漢0", "the", " word", "\n\n", "  ", "'s", "Hello", " 123"]
_DOC = st.lists(st.sampled_from(_PARTS), min_size=1, max_size=40).map("".join)
_HEADERS = ["", "Title", 'Guide > <Install> & "more"']


@dataclass(frozen=True)
class Case:
    docs: dict[str, str]
    hits: list[Hit]
    budget: int

    def span_text(self, doc_id: str, start: int, end: int) -> str:
        return self.docs[doc_id][start:end]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    docs: dict[str, str] = {}
    candidates: dict[tuple[str, int, int], str] = {}  # one header per span: ids stay unique
    for d in range(draw(st.integers(1, 3))):
        doc_id, text = f"doc{d}", draw(_DOC)
        docs[doc_id] = text
        n = len(text)
        cuts = sorted({0, n, *draw(st.lists(st.integers(0, n), max_size=8))})
        spans = list(pairwise(cuts))
        pairs = draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), max_size=6))
        spans += [(min(a, b), max(a, b)) for a, b in pairs if a != b]
        for start, end in spans:
            candidates.setdefault((doc_id, start, end), draw(st.sampled_from(_HEADERS)))
    every = sorted(candidates.items())
    # Either every span in random order (many neighbours to merge), or a random draw
    # with repeats.
    picks = draw(
        st.one_of(st.permutations(every), st.lists(st.sampled_from(every), min_size=1, max_size=16))
    )
    hits = [
        Hit(
            rank=i,
            chunk_id=f"{doc_id}#{start}-{end}",
            doc_id=doc_id,
            score=float(len(picks) - i),
            start=start,
            end=end,
            n_tokens=COUNTER.count(docs[doc_id][start:end]),
            text=docs[doc_id][start:end],
            header=header,
        )
        for i, ((doc_id, start, end), header) in enumerate(picks, 1)
    ]
    # Budgets from 0 to a bit more than everything costs (framing is 8-25 tokens a piece).
    total = sum(h.n_tokens + 20 for h in hits)
    # Hypothesis favours the first element and small integers: start at a roomy 100 %.
    budget = total * draw(st.sampled_from([100, *range(20, 131), 5, 0])) // 100
    return Case(docs, hits, budget)


def outcomes(hits: list[Hit], selection: Selection) -> list[str]:
    """Per input hit, "selected" or its drop reason; checks each hit appears exactly once."""
    selected = [i for c in selection.chunks for i in c.chunk_ids]
    assert len(selected) == len(set(selected))
    given_ids = Counter(h.chunk_id for h in hits)
    assert Counter(selected) + Counter(d.chunk_id for d in selection.dropped) == given_ids
    result, seen, dropped = [], set(), iter(selection.dropped)
    for h in hits:
        if h.chunk_id in selected and h.chunk_id not in seen:
            result.append("selected")
        else:
            drop = next(dropped)
            assert drop.chunk_id == h.chunk_id  # dropped are listed in ranking order
            result.append(drop.reason)
        seen.add(h.chunk_id)
    return result


def alone_cost(h: Hit, fmt: str) -> int:
    return COUNTER.count(frame(h.doc_id, h.start, h.end, h.header, h.text, fmt))


def check_selection(case: Case, selection: Selection, fmt: str, dedup: bool) -> list[str]:
    """Assert every invariant of one selection and return the per-hit outcomes."""
    assert selection.budget == case.budget
    assert selection.tokens_used <= case.budget
    assert selection.tokens_used == sum(c.tokens for c in selection.chunks)
    assert COUNTER.count(render(selection, fmt)) == selection.tokens_used
    result = outcomes(case.hits, selection)
    by_id = {h.chunk_id: (pos, h) for pos, h in reversed(list(enumerate(case.hits)))}
    best = []
    for c in selection.chunks:
        assert c.tokens == COUNTER.count(render_chunk(c, fmt))
        assert c.text == case.docs[c.doc_id][c.start : c.end]
        members = [by_id[i][1] for i in c.chunk_ids]
        assert [m.start for m in members] == sorted(m.start for m in members)
        assert (members[0].start, members[-1].end) == (c.start, c.end)
        assert c.header == members[0].header
        assert c.score == max(m.score for m in members)
        best.append(min(by_id[i][0] for i in c.chunk_ids))
    assert best == sorted(best)  # rank order of each piece's best chunk
    if dedup:
        spans = sorted((c.doc_id, c.start, c.end) for c in selection.chunks)
        for (d1, _, e1), (d2, s2, _) in pairwise(spans):
            assert d1 != d2 or e1 <= s2
    for drop in result:
        if drop.startswith("does not fit"):
            needs, left = (int(w) for w in drop.split() if w.isdigit())
            assert needs > left
    for d in selection.dropped:
        assert d.tokens == alone_cost(next(h for h in case.hits if h.chunk_id == d.chunk_id), fmt)
    if not case.hits:
        assert selection.note == "no hits"
    else:
        assert (selection.note == "") == bool(selection.chunks)
    return result


_OPTIONS = {
    "case": cases(),
    "fmt": st.sampled_from(FORMATS),
    "with_span_text": st.booleans(),
    "dedup": st.booleans(),
    "merge": st.booleans(),
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_OPTIONS)
def test_greedy_and_skip_invariants(
    case: Case, fmt: str, with_span_text: bool, dedup: bool, merge: bool
) -> None:
    options = {"format": fmt, "dedup": dedup, "merge": merge}
    options["span_text"] = case.span_text if with_span_text else None
    greedy = make_packer("greedy", COUNTER, **options).pack(case.hits, case.budget)
    skip = make_packer("skip", COUNTER, **options).pack(case.hits, case.budget)
    greedy_out = check_selection(case, greedy, fmt, dedup)
    skip_out = check_selection(case, skip, fmt, dedup)

    # Greedy selects a prefix of the ranking without repeats and overlaps: everything
    # after its first misfit is dropped as "greedy: stopped", nothing before it is.
    misfits = [i for i, o in enumerate(greedy_out) if o.startswith("does not fit")]
    stop = misfits[0] if misfits else len(greedy_out)
    assert misfits in ([], [stop])
    assert all(o.startswith(GREEDY_STOPPED) for o in greedy_out[stop + 1 :])
    assert not any(o.startswith(GREEDY_STOPPED) for o in greedy_out[:stop])
    assert not any(o.startswith(GREEDY_STOPPED) for o in skip_out)

    # Skip decides the same up to greedy's stop, then goes on: a superset of chunks, so
    # never less hit text. (tokens_used may be lower: a later merge can save a framing.)
    assert skip_out[:stop] == greedy_out[:stop]
    greedy_ids = {i for c in greedy.chunks for i in c.chunk_ids}
    skip_ids = {i for c in skip.chunks for i in c.chunk_ids}
    assert greedy_ids <= skip_ids
    assert sum(len(c.text) for c in skip.chunks) >= sum(len(c.text) for c in greedy.chunks)
    if not misfits:
        assert skip.chunks == greedy.chunks and skip.tokens_used == greedy.tokens_used

    # An empty skip selection means nothing could fit at all.
    if case.hits and not skip.chunks:
        smallest = min(alone_cost(h, fmt) for h in case.hits)
        assert case.budget < smallest
        assert skip.note == (
            f"budget {case.budget} is smaller than the smallest framed chunk ({smallest} tokens)"
        )


class QuarterCounter:
    """The chapter's estimate, ceil(chars / 4): never counts a concatenation higher."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), fmt=st.sampled_from(FORMATS), name=st.sampled_from(["greedy", "skip"]))
def test_an_estimating_counter_stays_within_the_budget(case: Case, fmt: str, name: str) -> None:
    counter = QuarterCounter()
    selection = make_packer(name, counter, format=fmt, span_text=case.span_text).pack(
        case.hits, case.budget
    )
    assert selection.tokens_used == sum(c.tokens for c in selection.chunks) <= case.budget
    assert counter.count(render(selection, fmt)) <= selection.tokens_used

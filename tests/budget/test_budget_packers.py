"""Packers on small, hand-checked cases: each drop reason, merging, notes, errors, speed."""

from __future__ import annotations

import random

import pytest
from budget_helpers import COUNTER, doc_hit, hit

from ctxselect.budget import (
    PACKERS,
    GreedyPacker,
    Packer,
    SkipPacker,
    frame,
    make_packer,
    render,
)
from ctxselect.errors import ConfigError, InputError, UnknownNameError
from ctxselect.types import Hit, Selection

DOC = "Alpha beta gamma. Delta epsilon.\n\nZeta eta theta. Iota kappa.\n"
DOCS = {"d": DOC}
C0 = doc_hit(1, "d", DOC, 0, 17, header="Greek")  # "Alpha beta gamma."
C1 = doc_hit(2, "d", DOC, 17, 32, header="Greek")  # " Delta epsilon."
C2 = doc_hit(3, "d", DOC, 34, 49, header="Greek")  # "Zeta eta theta." after "\n\n"
C3 = doc_hit(4, "d", DOC, 49, 61, header="Greek")  # " Iota kappa."


def span_text(doc_id: str, start: int, end: int) -> str:
    return DOCS[doc_id][start:end]


def cost(h: Hit, fmt: str = "markdown") -> int:
    return COUNTER.count(frame(h.doc_id, h.start, h.end, h.header, h.text, fmt))


def reasons(selection: Selection) -> dict[str, str]:
    return {d.chunk_id: d.reason for d in selection.dropped}


def ranked(*hits: Hit) -> list[Hit]:
    """Renumber ranks 1.. in the given order (the packers go by position)."""
    return [
        Hit(i, h.chunk_id, h.doc_id, h.score, h.start, h.end, h.n_tokens, h.text, h.header)
        for i, h in enumerate(hits, 1)
    ]


def test_registry_and_protocol() -> None:
    assert PACKERS.names() == ["greedy", "skip"]
    for name in PACKERS.names():
        packer = make_packer(name, COUNTER)
        assert isinstance(packer, Packer) and packer.name == name
    assert isinstance(make_packer("skip", COUNTER, format="xml"), SkipPacker)
    assert isinstance(make_packer("greedy", COUNTER), GreedyPacker)


def test_unknown_names_and_options_are_config_errors() -> None:
    with pytest.raises(UnknownNameError, match="unknown packer 'knap': choose one of greedy, skip"):
        make_packer("knap", COUNTER)
    with pytest.raises(UnknownNameError, match="unknown format 'yaml'"):
        make_packer("skip", COUNTER, format="yaml")
    with pytest.raises(ConfigError, match=r"unknown packer option.*top_k.*choose from format"):
        make_packer("skip", COUNTER, top_k=3)
    with pytest.raises(ConfigError, match="needs a token counter"):
        SkipPacker(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="span_text must be a function"):
        SkipPacker(COUNTER, span_text="doc")  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", [-1, 2.5, "100", True])
def test_bad_budget_is_config_error(budget: object) -> None:
    with pytest.raises(ConfigError, match="budget must be"):
        SkipPacker(COUNTER).pack([C0], budget)  # type: ignore[arg-type]


def test_backwards_span_is_input_error() -> None:
    bad = Hit(1, "d#9", "d", 1.0, 9, 3, 1, "x")
    with pytest.raises(InputError, match="start 9 after end 3"):
        SkipPacker(COUNTER).pack([bad], 100)


def test_no_hits_note() -> None:
    selection = SkipPacker(COUNTER).pack([], 100)
    assert selection == Selection((), 0, 100, (), "skip", "no hits", "markdown")


@pytest.mark.parametrize("name", ["skip", "greedy"])
@pytest.mark.parametrize("budget", [0, 5])
def test_budget_below_smallest_framed_chunk(name: str, budget: int) -> None:
    hits = ranked(C0, C2)
    smallest = min(cost(C0), cost(C2))
    selection = make_packer(name, COUNTER).pack(hits, budget)
    assert selection.chunks == () and selection.tokens_used == 0
    assert selection.note == (
        f"budget {budget} is smaller than the smallest framed chunk ({smallest} tokens)"
    )
    assert [d.chunk_id for d in selection.dropped] == ["d#0", "d#34"]
    assert selection.dropped[0].reason == f"does not fit: needs {cost(C0)} tokens, {budget} left"


def test_does_not_fit_skip_goes_on_greedy_stops() -> None:
    big = hit(1, "big", 0, "word " * 200)
    small = hit(2, "s", 0, "A small chunk.")
    budget = cost(small) + 3
    skip = SkipPacker(COUNTER).pack([big, small], budget)
    assert [c.chunk_ids for c in skip.chunks] == [("s#0",)]
    assert reasons(skip) == {"big#0": f"does not fit: needs {cost(big)} tokens, {budget} left"}
    assert skip.note == "" and skip.tokens_used == cost(small)

    greedy = GreedyPacker(COUNTER).pack([big, small], budget)
    assert greedy.chunks == ()
    assert reasons(greedy) == {
        "big#0": f"does not fit: needs {cost(big)} tokens, {budget} left",
        "s#0": "greedy: stopped at the first chunk that did not fit (big#0)",
    }
    assert greedy.note.startswith("greedy: the best chunk big#0 does not fit in budget")
    assert greedy.dropped[1].tokens == cost(small)


def test_duplicate_chunk_id_is_dropped() -> None:
    selection = SkipPacker(COUNTER).pack(ranked(C0, C2, C0), 1000)
    assert reasons(selection) == {"d#0": "duplicate: d#0 already appeared at rank 1"}
    # Duplicates are dropped even without dedup: a chunk is never framed twice.
    no_dedup = SkipPacker(COUNTER, dedup=False).pack(ranked(C0, C0), 1000)
    assert [c.chunk_ids for c in no_dedup.chunks] == [("d#0",)]


def test_overlapping_and_contained_chunks_are_dropped() -> None:
    across = doc_hit(2, "d", DOC, 10, 25)  # overlaps C0 and C1
    inside = doc_hit(3, "d", DOC, 2, 8)  # entirely inside C0
    covering = doc_hit(4, "d", DOC, 0, 40, chunk_id="d#cover")  # covers C0
    packer = SkipPacker(COUNTER, merge=False)
    selection = packer.pack(ranked(C0, across, inside, covering), 1000)
    assert [c.chunk_ids for c in selection.chunks] == [("d#0",)]
    assert reasons(selection) == {
        "d#10": "overlaps d#0",
        "d#2": "overlaps d#0",
        "d#cover": "overlaps d#0",
    }
    assert [d.tokens for d in selection.dropped] == [cost(across), cost(inside), cost(covering)]


def test_overlap_names_the_member_it_hits() -> None:
    across = doc_hit(3, "d", DOC, 20, 40)  # overlaps C1 and C2, not C0
    selection = SkipPacker(COUNTER, span_text=span_text).pack(ranked(C0, C1, C2, across), 1000)
    assert reasons(selection) == {"d#20": "overlaps d#17"}


def test_without_dedup_overlaps_are_kept() -> None:
    across = doc_hit(2, "d", DOC, 10, 25)
    selection = SkipPacker(COUNTER, dedup=False).pack(ranked(C0, across), 1000)
    assert [c.chunk_ids for c in selection.chunks] == [("d#0",), ("d#10",)]


def test_touching_chunks_merge_without_span_text() -> None:
    selection = SkipPacker(COUNTER).pack(ranked(C1, C0), 1000)
    (piece,) = selection.chunks
    assert piece.chunk_ids == ("d#0", "d#17")  # document order
    assert (piece.start, piece.end, piece.text) == (0, 32, DOC[0:32])
    assert piece.header == "Greek" and piece.score == max(C0.score, C1.score)
    assert piece.tokens == COUNTER.count(render(selection)) == selection.tokens_used
    assert piece.n_tokens == COUNTER.count(DOC[0:32])
    assert selection.tokens_used < cost(C0) + cost(C1)  # one framing instead of two


def test_whitespace_gap_merges_only_with_span_text() -> None:
    apart = SkipPacker(COUNTER).pack(ranked(C1, C2), 1000)
    assert [c.chunk_ids for c in apart.chunks] == [("d#17",), ("d#34",)]
    merged = SkipPacker(COUNTER, span_text=span_text).pack(ranked(C1, C2), 1000)
    (piece,) = merged.chunks
    assert (piece.chunk_ids, piece.text) == (("d#17", "d#34"), DOC[17:49])
    assert merged.tokens_used == COUNTER.count(render(merged))


def test_text_between_chunks_blocks_merging() -> None:
    selection = SkipPacker(COUNTER, span_text=span_text).pack(ranked(C0, C2), 1000)
    assert [c.chunk_ids for c in selection.chunks] == [("d#0",), ("d#34",)]


def test_a_chunk_bridging_two_pieces_joins_all_three() -> None:
    selection = SkipPacker(COUNTER, span_text=span_text).pack(ranked(C0, C2, C1, C3), 1000)
    (piece,) = selection.chunks
    assert piece.chunk_ids == ("d#0", "d#17", "d#34", "d#49")
    assert (piece.start, piece.end, piece.text) == (0, 61, DOC[0:61])
    assert selection.tokens_used == piece.tokens == COUNTER.count(render(selection))


def test_merge_off_keeps_pieces_apart() -> None:
    selection = SkipPacker(COUNTER, merge=False).pack(ranked(C1, C0), 1000)
    assert [c.chunk_ids for c in selection.chunks] == [("d#17",), ("d#0",)]


def test_merging_frees_budget() -> None:
    merged_cost = SkipPacker(COUNTER).pack(ranked(C0, C1), 1000).tokens_used
    assert merged_cost < cost(C0) + cost(C1)
    fits = SkipPacker(COUNTER).pack(ranked(C0, C1), merged_cost)
    assert [c.chunk_ids for c in fits.chunks] == [("d#0", "d#17")]
    apart = SkipPacker(COUNTER, merge=False).pack(ranked(C0, C1), merged_cost)
    left = merged_cost - cost(C0)
    assert reasons(apart) == {"d#17": f"does not fit: needs {cost(C1)} tokens, {left} left"}


def test_a_merge_never_exceeds_the_budget() -> None:
    merged_cost = SkipPacker(COUNTER).pack(ranked(C0, C1), 1000).tokens_used
    budget = merged_cost - 1
    selection = SkipPacker(COUNTER).pack(ranked(C0, C1), budget)
    assert selection.tokens_used == cost(C0) <= budget
    needed = merged_cost - cost(C0)
    left = budget - cost(C0)
    assert reasons(selection) == {"d#17": f"does not fit: needs {needed} tokens, {left} left"}


def test_selection_is_in_rank_order_of_each_pieces_best_chunk() -> None:
    other = hit(2, "e", 0, "Other document text.")
    selection = SkipPacker(COUNTER).pack(ranked(C1, other, C0), 1000)
    assert [c.chunk_ids for c in selection.chunks] == [("d#0", "d#17"), ("e#0",)]
    later = SkipPacker(COUNTER).pack(ranked(other, C1, C0), 1000)
    assert [c.chunk_ids for c in later.chunks] == [("e#0",), ("d#0", "d#17")]


def test_skip_selects_more_yet_may_use_fewer_tokens_than_greedy() -> None:
    # A small chunk bridging two selected pieces saves a framing: skip ends up with a
    # superset of greedy's chunks but fewer tokens. Hence the property tests compare
    # chunk sets and hit text, not tokens_used.
    doc = "Alpha beta gamma.X Delta epsilon."
    DOCS["b"] = doc
    first, second = doc_hit(1, "b", doc, 0, 17), doc_hit(2, "b", doc, 18, 33)
    bridge = doc_hit(4, "b", doc, 17, 18)
    big = hit(3, "big", 0, "word " * 100)
    hits = ranked(first, second, big, bridge)
    budget = cost(first) + cost(second) + 5
    greedy = GreedyPacker(COUNTER).pack(hits, budget)
    skip = SkipPacker(COUNTER).pack(hits, budget)
    greedy_ids = {i for c in greedy.chunks for i in c.chunk_ids}
    skip_ids = {i for c in skip.chunks for i in c.chunk_ids}
    assert greedy_ids == {"b#0", "b#18"} and skip_ids == greedy_ids | {"b#17"}
    assert skip.tokens_used < greedy.tokens_used
    assert [c.text for c in skip.chunks] == [doc]


@pytest.mark.parametrize("fmt", ["markdown", "xml", "json"])
def test_tokens_add_up_in_every_format(fmt: str) -> None:
    hits = ranked(C2, hit(2, "e", 0, "<tag> & 'quotes' \"here\""), C0, C1)
    selection = SkipPacker(COUNTER, format=fmt).pack(hits, 1000)
    assert selection.tokens_used == sum(c.tokens for c in selection.chunks)
    assert COUNTER.count(render(selection, fmt)) == selection.tokens_used


class _CallCounter:
    name = "calls"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return COUNTER.count(text)


def _corpus_hits(n_docs: int, per_doc: int, n_hits: int, seed: int) -> list[Hit]:
    rng = random.Random(seed)
    words = ["the", "token", "budget", "chunk", "rank", "select", "context", "window"]
    hits: list[Hit] = []
    for d in range(n_docs):
        offset = 0
        for _ in range(per_doc):
            text = " ".join(rng.choice(words) for _ in range(250)) + ".\n"
            hits.append(hit(0, f"doc{d}", offset, text, header=f"Doc {d} > Part"))
            offset += len(text)
    picked = rng.sample(hits, n_hits)
    return ranked(*picked)


@pytest.mark.parametrize("budget", [4000, 10**6])
def test_packing_100_hits_counts_little(budget: int) -> None:
    hits = _corpus_hits(n_docs=10, per_doc=20, n_hits=100, seed=7)
    counter = _CallCounter()
    packer = SkipPacker(counter)
    selection = packer.pack(hits, budget)
    assert selection.tokens_used <= budget
    assert COUNTER.count(render(selection)) == selection.tokens_used
    # One count per hit, at most three per merge option, one per piece for n_tokens.
    assert counter.calls <= 4 * len(hits) + len(selection.chunks)


def test_merged_piece_takes_the_header_of_its_first_chunk() -> None:
    later = doc_hit(2, "d", DOC, 17, 32, header="Greek > Delta")
    selection = SkipPacker(COUNTER).pack(ranked(later, C0), 1000)
    (piece,) = selection.chunks
    assert piece.header == "Greek"
    assert render(selection).startswith("~~~ d:0-32 | Greek\nAlpha beta gamma. Delta epsilon.\n")


@pytest.mark.parametrize("dedup", [True, False])
def test_an_empty_span_is_selected_or_dropped_once(dedup: bool) -> None:
    empty = hit(2, "d", 17, "", chunk_id="d#empty")
    selection = SkipPacker(COUNTER, dedup=dedup).pack(ranked(C0, empty, C1), 1000)
    ids = [i for c in selection.chunks for i in c.chunk_ids] + [
        d.chunk_id for d in selection.dropped
    ]
    assert sorted(ids) == ["d#0", "d#17", "d#empty"]
    assert selection.tokens_used == COUNTER.count(render(selection)) <= 1000
    if dedup:
        assert reasons(selection) == {"d#empty": "overlaps d#0"}

"""grep past a block larger than the whole budget (a minified line), and short references
when every line of a block matched."""

from __future__ import annotations

import pytest

from ctxselect import api
from ctxselect.agent import Sessions
from ctxselect.agent.grep import grep_index


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("oversize")
    docs = root / "docs"
    docs.mkdir()
    # sorted first, so in (doc_id, line) order its one huge line comes before the rest
    (docs / "a.min.js").write_text(";".join(f"v{i}=needle{i}" for i in range(6000)) + "\n")
    (docs / "b.md").write_text("# B\n\nA needle in a normal file.\n")
    (docs / "c.md").write_text("# C\n\n" + "".join(f"row {i}\n" for i in range(40)))
    api.index_paths([docs], index=root / "idx")
    return root / "idx"


@pytest.fixture
def index(folder):
    opened = api.open_index(folder)
    yield opened
    opened.close()


def test_a_block_larger_than_the_budget_hides_no_later_match(index):
    result = grep_index(index, "needle", budget=500)
    assert [b.doc_id for b in result.blocks] == ["b.md"]
    assert result.matches == 2 and result.matches_left_out == 1
    assert result.stop.startswith("budget full: a block (a.min.js lines 1-1) needs ")
    assert "more than the whole budget of 500" in result.stop
    assert result.note.startswith("left out 1 block(s) larger than the whole budget (a.min.js")
    start = index.get_document("a.min.js").text.index("needle")
    assert f"get_document (start {start})" in result.note
    assert result.tokens_used <= 500


def test_a_block_that_fits_the_budget_but_not_what_is_left_still_stops(index):
    full = grep_index(index, "row|needle", include=["*.md"], context=0, budget=2000)
    b, c = full.blocks
    budget = c.tokens + b.tokens - 1  # c alone fits, after b it does not
    wide = grep_index(index, "row|needle", include=["*.md"], context=0, budget=budget)
    assert [x.doc_id for x in wide.blocks] == ["b.md"]
    assert wide.stop.startswith("budget full: the next block (c.md lines 3-42) needs ")
    assert wide.note == ""


def test_a_reference_to_a_block_of_matching_lines_names_runs(folder):
    service = Sessions.open(folder)
    try:
        first = service.grep("s", "^row", include=["c.md"], context=0, budget=2000)
        second = service.grep("s", "^row", include=["c.md"], context=0, budget=2000)
    finally:
        service.close()
    [block] = first.blocks
    [ref] = second.references
    assert ref.text == "already provided: c.md lines 3-42 (matches on lines 3-42) in call 1"
    assert ref.lines == tuple(m.line for m in block.matches) == tuple(range(3, 43))


def test_line_runs():
    from ctxselect.agent.grep_session import line_runs

    assert line_runs((7,)) == "7"
    assert line_runs((1, 2, 3, 5, 7, 8)) == "1-3, 5, 7-8"

"""grep over an index's stored documents: matches, globs, context blocks, budget, bounds,
bad input, and a session's references instead of repeats."""

from __future__ import annotations

import re
import time

import pytest

from _support.grep_corpus import build
from ctxselect import api
from ctxselect.agent import Sessions, line_ranges
from ctxselect.agent import grep as grep_module
from ctxselect.agent.grep import grep_index
from ctxselect.errors import ConfigError


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("grep"))


@pytest.fixture(scope="module")
def index(folder):
    opened = api.open_index(folder)
    yield opened
    opened.close()


@pytest.fixture
def service(folder):
    opened = Sessions.open(folder)
    yield opened
    opened.close()


def _docs(result) -> list[str]:
    return sorted({b.doc_id for b in result.blocks})


def test_blocks_and_matches_point_into_the_stored_text(index):
    result = grep_index(index, r"parse_\w+", context=1)
    assert result.blocks and result.matches == sum(len(b.matches) for b in result.blocks)
    for block in result.blocks:
        text = index.get_document(block.doc_id).text
        assert text[block.start : block.end] == block.text
        # whole lines: the block starts after a newline and ends with one (or the text)
        assert block.start == 0 or text[block.start - 1] == "\n"
        assert block.end == len(text) or text[block.end - 1] == "\n"
        assert line_ranges(index, [(block.doc_id, block.start, block.end)]) == [
            (block.line_start, block.line_end)
        ]
        for match in block.matches:
            assert re.fullmatch(r"parse_\w+", text[match.start : match.end])
            assert match.line == text.count("\n", 0, match.start) + 1
            assert block.line_start <= match.line <= block.line_end
        assert block.tokens == index.count_tokens(block.text)
    app = next(b for b in result.blocks if b.doc_id == "src/app.py")
    assert [m.line for m in app.matches] == [6] and (app.line_start, app.line_end) == (5, 7)


def test_regex_literal_and_case(index):
    regex = grep_index(index, "a.b", context=0)
    fixed = grep_index(index, "a.b", fixed=True, context=0)
    assert {b.text for b in fixed.blocks} == {"# the literal a.b\n"}
    assert fixed.matches == 1 and regex.matches > fixed.matches  # '.' matches any character
    assert _docs(grep_index(index, "parse_header")) == [
        "releases/1.0.md", "src/app.py", "src/util/helpers.py"
    ]  # fmt: skip
    assert _docs(grep_index(index, "parse_header", ignore_case=True)) == [
        "docs/guide.md", "releases/1.0.md", "src/app.py", "src/util/helpers.py"
    ]  # fmt: skip
    anchored = grep_index(index, r"^def \w+", context=0)
    assert [m.line for b in anchored.blocks for m in b.matches if b.doc_id == "src/app.py"] == [
        6, 12
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("include", "exclude", "docs"),
    [
        (["*.py"], [], ["src/app.py", "src/util/helpers.py"]),
        (["src/"], ["util/"], ["src/app.py"]),
        ([], ["releases/"], ["docs/guide.md", "src/app.py", "src/util/helpers.py"]),
        (["/docs/*.md"], [], ["docs/guide.md"]),
        (["**/*.md", "!releases/**"], [], ["docs/guide.md"]),
    ],
)
def test_globs_choose_documents_by_id(index, include, exclude, docs):
    result = grep_index(index, "parse_header", ignore_case=True, include=include, exclude=exclude)
    assert _docs(result) == docs


def test_context_windows_merge_where_they_overlap_or_touch(index):
    # needles on lines 10, 20, 30, ...: windows of 4 lines leave a gap, of 5 touch
    apart = grep_index(index, "^needle", include=["long.md"], context=4, budget=100_000)
    merged = grep_index(index, "^needle", include=["long.md"], context=5, budget=100_000)
    assert [(b.line_start, b.line_end) for b in apart.blocks[:2]] == [(6, 14), (16, 24)]
    assert len(apart.blocks) == 20 and all(len(b.matches) == 1 for b in apart.blocks)
    assert len(merged.blocks) == 1 and (merged.blocks[0].line_start, merged.blocks[0].line_end) == (
        5, 200
    )  # fmt: skip
    assert [m.line for m in merged.blocks[0].matches] == list(range(10, 201, 10))


def test_order_is_doc_id_then_line_and_stable(index):
    first = grep_index(index, r"\w+", context=0, budget=100_000)
    keys = [(b.doc_id, b.line_start) for b in first.blocks]
    assert keys == sorted(keys) and len({d for d, _ in keys}) == 5
    assert grep_index(index, r"\w+", context=0, budget=100_000) == first


def test_the_budget_stops_the_result_and_says_what_was_left_out(index):
    full = grep_index(index, "needle", include=["long.md"], context=2, budget=100_000)
    cut = grep_index(index, "needle", include=["long.md"], context=2, budget=100)
    assert full.stop == "all matches" and full.matches_left_out == 0 and full.matches == 20
    assert cut.tokens_used <= 100 < full.tokens_used
    assert cut.tokens_used == sum(b.tokens for b in cut.blocks)
    assert cut.blocks == full.blocks[: len(cut.blocks)]  # a prefix, in order
    assert cut.stop.startswith("budget full: the next block (docs/long.md lines")
    assert cut.matches == 20 and cut.matches_left_out == 20 - len(cut.blocks) > 0


def test_chunk_ids_are_the_chunks_a_block_overlaps(index):
    table = index.table
    for block in grep_index(index, "needle|parse", budget=100_000).blocks:
        rows = [r for r, d in enumerate(table.doc_ids) if d == block.doc_id]
        expected = {
            table.chunk_ids[r]
            for r in rows
            if table.starts[r] < block.end and block.start < table.ends[r]
        }
        assert set(block.chunk_ids) == expected and expected


def test_the_match_cap_stops_scanning(index, monkeypatch):
    monkeypatch.setattr(grep_module, "MAX_MATCHES", 3)
    result = grep_index(index, "needle", context=0)
    assert result.matches == 3 and result.stop.startswith("match cap")


def test_a_catastrophic_regex_is_stopped_by_the_time_limit(tmp_path, monkeypatch):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.txt").write_text(("a" * 40 + "!\n") * 50, encoding="utf-8")
    api.index_paths([root], tmp_path / "ix")
    monkeypatch.setattr(grep_module, "TIME_LIMIT", 0.3)
    with api.open_index(tmp_path / "ix") as index:
        began = time.monotonic()
        result = grep_index(index, r"(a|aa)+$")
        assert time.monotonic() - began < 5
    assert result.stop.startswith("time limit: scanning passed 0.3 s in 'a.txt' after 0 of 1")
    assert result.blocks == ()


def test_an_invalid_regex_is_one_line_naming_the_position(index):
    with pytest.raises(ConfigError) as caught:
        grep_index(index, "parse_(header")
    message = str(caught.value)
    assert "invalid regex 'parse_(header' at position 13: missing )" in message
    assert "fixed" in message and "\n" not in message
    assert grep_index(index, "parse_(header", fixed=True).note.startswith("no match")


@pytest.mark.parametrize(
    ("kind", "glob", "position"),
    [("include", "src/[ab", 4), ("exclude", "docs\\", 4), ("include", "#notes", 0)],
)
def test_an_invalid_glob_is_one_line_naming_the_position(index, kind, glob, position):
    with pytest.raises(ConfigError) as caught:
        grep_index(index, "x", **{kind: [glob]})
    message = str(caught.value)
    assert message.startswith(f"invalid {kind} glob {glob!r} at position {position}: ")
    assert "\n" not in message


def test_a_filter_that_excludes_everything_says_which(index):
    by_include = grep_index(index, "parse", include=["*.rs", "vendor/"])
    by_exclude = grep_index(index, "parse", include=["src/"], exclude=["*.py"])
    assert by_include.blocks == () and by_include.documents == 0
    assert by_include.note == "include '*.rs', 'vendor/' matches none of the 5 documents"
    assert by_exclude.blocks == () and by_exclude.documents == 0
    assert by_exclude.note == "exclude '*.py' leaves none of the 2 documents include kept"


def test_a_pattern_that_matches_nothing_says_so(index):
    result = grep_index(index, "no_such_identifier")
    assert result.blocks == () and result.matches == 0 and result.stop == "all matches"
    assert result.note == "no match for 'no_such_identifier' in 5 documents"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"context": 21}, "context must be between 0 and 20"),
        ({"context": -1}, "context must be between 0 and 20"),
        ({"budget": 10}, "budget 10 is below the minimum"),
    ],
)
def test_out_of_bounds_options_are_refused(index, options, words):
    with pytest.raises(ConfigError, match=words):
        grep_index(index, "x", **options)
    with pytest.raises(ConfigError, match="pattern is empty"):
        grep_index(index, "  ")


def test_a_repeat_in_a_session_sends_references(service):
    first = service.grep("s", "needle", include=["long.md"], context=3, budget=300)
    second = service.grep("s", "needle", include=["long.md"], context=3, budget=300)
    assert first.blocks and first.references == () and first.call == 1
    assert len(second.references) == len(first.blocks) and second.call == 2
    for block, ref in zip(first.blocks, second.references, strict=True):
        assert (ref.doc_id, ref.start, ref.end, ref.call) == (
            block.doc_id,
            block.start,
            block.end,
            1,
        )
        assert ref.lines == tuple(m.line for m in block.matches)
        assert ref.tokens + ref.tokens_saved == block.tokens
        assert ref.text == (
            f"already provided: docs/long.md lines {block.line_start}-{block.line_end} "
            f"(matches on line {ref.lines[0]}) in call 1"
        )
    # the references cost less, so the same budget reaches further: new blocks only
    assert second.blocks and second.blocks[0].line_start > first.blocks[-1].line_end
    assert second.tokens_used <= 300 and second.matches_left_out < first.matches_left_out
    third = service.grep("s", "needle", include=["long.md"], context=3, budget=300)
    assert third.references[: len(second.references)] == second.references
    assert service.grep(None, "needle", include=["long.md"], context=3).references == ()


def test_a_block_cheaper_than_its_reference_is_sent_again(service):
    first = service.grep("s", "needle", include=["long.md"], context=0)
    again = service.grep("s", "needle", include=["long.md"], context=0)
    assert again.references == () and again.blocks == first.blocks  # one short line each


def test_blocks_inside_chunks_the_session_received_are_references(service):
    chunk = service.get_chunk("s", "src/app.py#0")
    result = service.grep("s", "parse_header", context=5)
    refs = {r.doc_id: r for r in result.references}
    assert set(refs) == {"src/app.py"} and refs["src/app.py"].call == chunk.call == 1
    assert "src/app.py" not in _docs(result)
    assert _docs(result) == ["releases/1.0.md", "src/util/helpers.py"]


def test_blocks_sent_count_as_received(service):
    # a block that spans a whole document holds its chunk: select sends a reference
    sent = service.grep("s", "parse_header", include=["releases/"], context=5)
    assert [b.chunk_ids for b in sent.blocks] == [("releases/1.0.md#0",)]
    context = service.select("s", "when was parse_header added", 400, stop="none")
    assert "releases/1.0.md#0" in {r.chunk_id for r in context.references}


def test_a_session_result_stays_under_the_cap(folder):
    small = Sessions.open(folder, max_result_tokens=1000)
    try:
        result = small.grep("s", r"\w+", context=0, budget=1000)
        with pytest.raises(ConfigError, match="above the result cap"):
            small.grep("s", "x", budget=1001)
    finally:
        small.close()
    assert result.result_tokens <= 1000 and result.tokens_used <= 1000
    assert result.matches_left_out > 0 and result.call == 1

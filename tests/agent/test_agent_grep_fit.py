"""A session's grep result cut to the cap: few whole-result measurements, the fewest blocks
left out, and a ``stop`` that says the cap (not "all matches") ended it; a scan that
stopped early says so first, whatever else ended the result."""

from __future__ import annotations

import dataclasses

import pytest

from ctxselect import api
from ctxselect.agent import Sessions
from ctxselect.agent import grep as grep_module
from ctxselect.agent.grep import grep_index, scan_stop, stop_reason
from ctxselect.agent.grep_session import cut_grep
from ctxselect.agent.results import Meter

LINES = 3000


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("many") / "corpus"
    root.mkdir()
    # a match every other line: with context 0 each is a block of its own
    body = "".join(f"entry {i} holds the needle {i * 7}\nfiller\n" for i in range(LINES))
    (root / "many.txt").write_text(body, encoding="utf-8")
    (root / "other.txt").write_text("nothing to find here\n", encoding="utf-8")
    folder = root.parent / "ix"
    api.index_paths([root], folder)
    return folder


@pytest.fixture
def small(folder):
    opened = Sessions.open(folder, max_result_tokens=1000)
    yield opened
    opened.close()


def test_a_result_cut_to_the_cap_is_measured_a_few_times_not_once_per_block(small, monkeypatch):
    calls = []
    measured = Meter.measured

    def counting(self, value, before):
        calls.append(len(getattr(value, "blocks", ())))
        return measured(self, value, before)

    monkeypatch.setattr(Meter, "measured", counting)
    result = small.grep("s", "needle", context=0, budget=1000)
    found = grep_index(small.index, "needle", context=0, budget=1000)
    assert len(found.blocks) > 100 > len(result.blocks) > 0  # many blocks were cut
    assert len(calls) <= 20  # was one measurement per block cut
    assert max(calls) <= 2 * len(result.blocks)  # none of the whole, too-large result
    assert result.result_tokens <= 1000 and result.tokens_used <= 1000


def test_the_cut_leaves_out_the_fewest_blocks_and_says_so(small):
    result = small.grep("s", "needle", context=0, budget=1000)
    found = grep_index(small.index, "needle", context=0, budget=1000)
    found = dataclasses.replace(found, call=1, max_result_tokens=1000)
    k = len(found.blocks) - len(result.blocks)
    assert small.meter.measured(cut_grep(found, k), 0) == result
    assert small.meter.measured(cut_grep(found, k - 1), 0).result_tokens > 1000
    assert result.blocks == found.blocks[: len(result.blocks)]
    shown = sum(len(b.matches) for b in result.blocks)
    assert result.matches == LINES and result.matches_left_out == LINES - shown
    assert result.tokens_used == sum(b.tokens for b in result.blocks)
    assert result.stop.startswith("result cap: the result must stay within 1,000 tokens")
    nxt = found.blocks[len(result.blocks)]
    assert f"before the block for many.txt lines {nxt.line_start}-{nxt.line_end}" in result.stop
    assert "--max-result-tokens" in result.stop and result.note


def test_the_match_cap_is_named_before_a_full_budget(folder, monkeypatch):
    with api.open_index(folder) as index:
        result = grep_index(index, "needle", context=0, budget=100)
        assert result.stop.startswith("budget full: the next block")  # the cap is not hit
        monkeypatch.setattr(grep_module, "MAX_MATCHES", 500)
        capped = grep_index(index, "needle", context=0, budget=100)
    assert capped.matches == 500 and capped.matches_left_out > 0
    assert capped.stop.startswith("match cap: more than 500 matching lines")
    assert "; then budget full: the next block" in capped.stop


def test_the_match_cap_is_named_before_the_result_cap(small, monkeypatch):
    monkeypatch.setattr(grep_module, "MAX_MATCHES", 500)
    result = small.grep("s", "needle", context=0, budget=1000)
    assert result.matches == 500 and result.result_tokens <= 1000
    assert result.stop.startswith("match cap: more than 500 matching lines")
    assert "; then result cap: the result must stay within 1,000 tokens" in result.stop


def test_a_time_limit_is_named_before_what_ended_the_blocks():
    late = "time limit: scanning passed 5 s after 3 of 9 documents: narrow include"
    full = "budget full: the next block (a.md lines 1-2) needs 9 tokens and 3 are left"
    assert stop_reason(late, full) == f"{late}; then {full}"
    assert scan_stop(stop_reason(late, full)) == late and scan_stop(full) == ""
    assert stop_reason("", "") == "all matches" and stop_reason("", full) == full

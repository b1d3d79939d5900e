"""select --stop auto on an uncalibrated index whose top chunks tie exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxselect as cs

N_NOTES = 25


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> cs.Index:
    folder = tmp_path_factory.mktemp("notes")
    for i in range(10, 10 + N_NOTES):  # same length, same terms: identical bm25 scores
        (folder / f"n{i}.md").write_text(
            f"# Note {i}\n\nThe deploy key rotation for service {i} is done weekly.\n"
        )
    return cs.build_index([folder], Path(tmp_path_factory.mktemp("ix")) / "index")


def test_tied_scores_are_not_cut_after_the_first_chunk(index: cs.Index) -> None:
    scores = {h.score for h in index.search("deploy key rotation", N_NOTES)}
    assert len(scores) == 1  # the premise: every note ties
    selection = index.select("deploy key rotation", 2000)
    assert len(selection.chunks) == N_NOTES
    assert "score gap" not in selection.stop
    assert not any("score gap" in d.reason for d in selection.dropped)


def test_tied_scores_select_reproducibly(index: cs.Index) -> None:
    first = index.select("deploy key rotation", 300, packer="greedy")
    again = index.select("deploy key rotation", 300, packer="greedy")
    assert first == again
    assert [c.doc_id for c in first.chunks] == sorted(c.doc_id for c in first.chunks)

"""eval --index X --corpus Y never wipes an index built from other roots.

Evaluating a labeled corpus "in" a project's index re-indexed the index from that corpus
and removed every document it held, without a word (found by exploratory testing).
"""

from __future__ import annotations

import pytest

from _support.stopping_corpus import make_labeled
from ctxselect import api
from ctxselect.api.evaluate import evaluate_corpus
from ctxselect.errors import ConfigError


def test_an_index_of_other_roots_is_refused_and_kept(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("# Notes\n\nOur release checklist.\n", encoding="utf-8")
    folder = tmp_path / "ix"
    api.index_paths([project], folder)
    (tmp_path / "labeled").mkdir()
    labeled = make_labeled(tmp_path / "labeled")
    with pytest.raises(ConfigError, match=r"holds 1 documents? from .*project.* remove them"):
        evaluate_corpus(labeled["corpus"], labeled["queries"], labeled["qrels"], index=folder)
    with api.open_index(folder) as idx:
        assert idx.store.counts()["documents"] == 1
        assert list(idx.settings.roots) == [str(project.resolve())]


def test_an_index_of_the_same_corpus_is_reused(tmp_path):
    (tmp_path / "labeled").mkdir()
    labeled = make_labeled(tmp_path / "labeled")
    folder = tmp_path / "ix"
    api.index_paths([labeled["corpus"]], folder)
    result = evaluate_corpus(labeled["corpus"], labeled["queries"], labeled["qrels"], index=folder)
    assert result.index == str(folder) and result.metrics["ndcg@10"] > 0
    fresh = evaluate_corpus(
        labeled["corpus"], labeled["queries"], labeled["qrels"], index=tmp_path / "new"
    )
    assert fresh.metrics == result.metrics

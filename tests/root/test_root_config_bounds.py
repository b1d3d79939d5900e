"""Every numeric setting of the Python API refuses NaN, infinities and out-of-range values."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxselect import config
from ctxselect.api.evaluate import evaluate_corpus
from ctxselect.api.watch import watch_paths
from ctxselect.api.write import index_paths
from ctxselect.config import BM25Params, BudgetSpec, ChunkSpec, FuseSpec
from ctxselect.errors import ConfigError
from ctxselect.eval import randomization_test, session_cost

NAN, INF = math.nan, math.inf

BAD: list[tuple[str, Callable[[], object]]] = [
    ("k1 nan", lambda: BM25Params(k1=NAN)),
    ("k1 inf", lambda: BM25Params(k1=INF)),
    ("k1 1e308", lambda: BM25Params(k1=1e308)),
    ("k1 -1", lambda: BM25Params(k1=-1.0)),
    ("b nan", lambda: BM25Params(b=NAN)),
    ("b -inf", lambda: BM25Params(b=-INF)),
    ("size huge", lambda: ChunkSpec(size=10**12)),
    ("size 0", lambda: ChunkSpec(size=0)),
    ("size float", lambda: ChunkSpec(size=512.0)),  # type: ignore[arg-type]
    ("overlap float", lambda: ChunkSpec(overlap=1.5)),  # type: ignore[arg-type]
    ("budget huge", lambda: BudgetSpec(budget=10**15)),
    ("budget -1", lambda: BudgetSpec(budget=-1)),
    ("fuse k nan", lambda: FuseSpec(k=NAN)),
    ("fuse k inf", lambda: FuseSpec(k=INF)),
    ("fuse weight nan", lambda: FuseSpec(weight=NAN)),
    ("fuse depth 0", lambda: FuseSpec(depth=0)),
    ("seed -1", lambda: randomization_test([0.1, 0.2], [0.2, 0.1], 10, seed=-1)),
    ("permutations huge", lambda: randomization_test([0.1], [0.2], 10**12)),
    ("cost budget huge", lambda: session_cost(10**15)),
    ("cost knee huge", lambda: session_cost(100, knee=10**15)),
]


@pytest.mark.parametrize("make", [m for _, m in BAD], ids=[n for n, _ in BAD])
def test_api_refuses_bad_numbers(make: Callable[[], object]) -> None:
    with pytest.raises(ConfigError) as info:
        make()
    message = str(info.value)
    # what (the setting), why (its valid range) and how (advice) in one line
    assert " must be " in message and "got " in message and "\n" not in message


def test_valid_values_at_the_edges_pass() -> None:
    BM25Params(k1=0.0, b=0.0)
    BM25Params(k1=10.0, b=1.0)
    ChunkSpec(size=config.MAX_CHUNK_SIZE, overlap=config.MAX_CHUNK_SIZE - 1)
    BudgetSpec(budget=0)
    FuseSpec(k=1e-3, weight=1.0, depth=1)


def test_bound_message_names_setting_range_and_advice() -> None:
    with pytest.raises(ConfigError, match=r"BM25 k1 must be a finite number from 0 to 10, got inf"):
        config.K1.check(INF)
    assert not config.K.valid(True)  # a bool is not a count
    assert config.K.valid(10**12)  # no upper limit: k past the corpus returns every hit


@pytest.mark.parametrize("wait", [NAN, INF, -1.0])
def test_index_paths_refuses_a_bad_wait(tmp_path: Path, wait: float) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("alpha beta\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="wait must be"):
        index_paths([tmp_path / "c"], tmp_path / "idx", wait=wait)


@pytest.mark.parametrize("interval", [NAN, INF, 0.0])
def test_watch_refuses_a_bad_interval(tmp_path: Path, interval: float) -> None:
    with pytest.raises(ConfigError, match="watch interval must be"):
        watch_paths([tmp_path], tmp_path / "idx", interval=interval, max_runs=1)


def test_evaluate_corpus_refuses_a_bad_depth(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha beta\n", encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "alpha", "label": "a.md"}\n', encoding="utf-8")
    for depth in (0, -5):
        with pytest.raises(ConfigError, match="run depth must be"):
            evaluate_corpus(tmp_path / "a.md", queries, depth=depth, index=tmp_path / "i")

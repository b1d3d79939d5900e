"""The read API refuses arguments of the wrong type with a ConfigError, not a Python error.

``Index.select``, ``search``, ``rank``, ``search_many``, ``explain`` and ``depth`` are the
boundary a Python caller crosses: a None query, a budget given as text, or a list where
``{qid: text}`` is expected is refused there, saying what to pass instead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from _support.sessions_corpus import FIRST, build
from ctxselect import api
from ctxselect.errors import ConfigError

Call = Callable[[api.Index], object]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> api.Index:
    return api.open_index(build(tmp_path_factory.mktemp("arguments"))[1])


QUERY_NOT_TEXT = "query must be a string, got NoneType None: pass the text to look for"
BUDGET_NOT_WHOLE = r"budget must be a whole number of tokens, got {} \({}\): pass an int"
K_BELOW_ONE = "k must be a whole number of chunks >= 1, got {}: pass "


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda ix: ix.select(None, 1000), QUERY_NOT_TEXT),
        (lambda ix: ix.search(None), QUERY_NOT_TEXT),
        (lambda ix: ix.rank(None, 5), QUERY_NOT_TEXT),
        (lambda ix: ix.explain(None, "a.md#0"), QUERY_NOT_TEXT),
        (lambda ix: ix.explain_top(None), QUERY_NOT_TEXT),
        (lambda ix: ix.search(b"cache"), "query must be a string, got bytes b'cache'"),
        (lambda ix: ix.select(FIRST, "1000"), BUDGET_NOT_WHOLE.format("'1000'", "str")),
        (lambda ix: ix.select(FIRST, 1000.0), BUDGET_NOT_WHOLE.format("1000.0", "float")),
        (lambda ix: ix.select(FIRST, None), BUDGET_NOT_WHOLE.format("None", "NoneType")),
        (lambda ix: ix.depth("1000"), BUDGET_NOT_WHOLE.format("'1000'", "str")),
        (lambda ix: ix.select(FIRST, 1000, k=0), K_BELOW_ONE.format(0) + "None"),
        (lambda ix: ix.select(FIRST, 1000, k="5"), K_BELOW_ONE.format("'5'") + "None"),
        (lambda ix: ix.search(FIRST, k=0), K_BELOW_ONE.format(0) + "how many"),
        (lambda ix: ix.rank(FIRST, 0), K_BELOW_ONE.format(0) + "how many"),
        (lambda ix: ix.search_many({"q1": FIRST}, k=0), K_BELOW_ONE.format(0) + "how many"),
        (
            lambda ix: ix.search_many([FIRST]),
            "queries must map a qid to each query's text, got list",
        ),
        (lambda ix: ix.search_many(FIRST), r"got str: pass \{qid: text\}"),
        (lambda ix: ix.search_many({"q1": None}), "query 'q1' must be a string, got NoneType"),
        (lambda ix: ix.select(FIRST, 50), "budget 50 is below the minimum of 100 tokens"),
        (lambda ix: ix.select(FIRST, 0), "budget 0 is below the minimum of 100 tokens"),
        (lambda ix: ix.select(FIRST, 10**12), "above the maximum of 100,000,000 tokens"),
        (lambda ix: ix.select(FIRST, 500, promote="no"), "promote must be True or False"),
        (lambda ix: ix.count_tokens(None), "text must be a string, got NoneType None"),
        (lambda ix: ix.render(None), "selection must be a ctxselect Selection, got NoneType"),
        (lambda ix: ix.select(FIRST, 500, include=5), "include must be a gitignore glob .*int 5"),
        (lambda ix: ix.search(FIRST, exclude=[3]), r"exclude must be a gitignore glob .*\[3\]"),
        (lambda ix: ix.select(FIRST, 500, where=5), "where must be key=value strings.*int 5"),
    ],
)
def test_a_wrong_argument_is_refused_with_what_to_pass(
    index: api.Index, call: Call, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        call(index)


def test_k_means_the_same_in_select_search_and_rank(index: api.Index) -> None:
    ranked = index.rank(FIRST, 3)
    assert [h.chunk_id for h in index.search(FIRST, 3)] == [h.chunk_id for h in ranked]
    considered = index.select(FIRST, 10_000, k=3, stop="none")
    chosen = {c for piece in considered.chunks for c in piece.chunk_ids}
    assert chosen and chosen <= {h.chunk_id for h in ranked}
    assert index.select(FIRST, 1000, k=None) == index.select(FIRST, 1000)


def test_search_many_keeps_the_qids_it_is_given(index: api.Index) -> None:
    queries = {"first": FIRST, "7": "weather report"}
    results = index.search_many(queries, 3)
    assert list(results) == list(queries)
    assert [h.chunk_id for h in results["first"]] == [h.chunk_id for h in index.search(FIRST, 3)]
    texts = [FIRST]
    listed = {str(i): q for i, q in enumerate(texts)}  # the fix the message names, for a list
    assert [h.chunk_id for h in index.search_many(listed, 3)["0"]] == [
        h.chunk_id for h in results["first"]
    ]


def test_whole_numbers_of_any_integer_type_are_taken(index: api.Index) -> None:
    assert index.select(FIRST, np.int64(1000)) == index.select(FIRST, 1000)
    assert index.depth(np.int32(1000)) == index.depth(1000)
    assert index.search(FIRST, np.int64(3)) == index.search(FIRST, 3)


def test_the_api_and_the_cli_take_the_same_budgets(index: api.Index) -> None:
    assert index.select(FIRST, 100).tokens_used <= 100  # the CLI's minimum
    assert index.select(FIRST, 100_000_000, k=3).tokens_used > 0  # and maximum

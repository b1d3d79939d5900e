"""Lab labels, lab table rows and renderers, and the budget metrics."""

from __future__ import annotations

import pytest

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import (
    BudgetRow,
    LabeledQuery,
    SizeSweepRow,
    answered_queries,
    estimate_tokens,
    evaluate,
    hit_at_budget,
    label_matches,
    labels_to_qrels,
    recall_at_budget,
    relevant_tokens_share,
    render_table,
    size_sweep_row,
    to_markdown,
    unmatched_labels,
)


@pytest.mark.parametrize(
    ("label", "doc_id", "expected"),
    [
        ("02", "02-chunking.md", True),
        ("02", "docs/02-chunking.md", True),
        ("02", "02.md", True),
        ("02", "02", True),
        ("02-chunking.md", "02-chunking.md", True),
        ("02-chunking.md", "docs/02-chunking.md", True),
        ("02-chunking", "docs/02-chunking.md", True),
        ("2", "02-chunking.md", False),
        ("2", "20-budget.md", False),
        ("02", "020-x.md", False),
        ("02", "02b.md", False),
        ("02", "docs02/x.md", False),
        ("02", "02/intro.md", False),  # a folder name is not the file name
        ("docs/02", "docs/02-chunking.md", True),
        ("docs/02", "site/docs/02-a.md", False),
        ("Chunking", "chunking.md", False),  # case-sensitive
        ("", "02-x.md", False),
        ("12345", "12345", True),
        ("1234", "12345", False),
    ],
)
def test_label_matches_rule(label, doc_id, expected):
    assert label_matches(label, doc_id) is expected


def test_labels_to_qrels_feeds_evaluate():
    docs = ["docs/01-intro.md", "docs/02-chunking.md", "docs/02-chunking-more.md"]
    items = [LabeledQuery("q1", "size?", "02"), LabeledQuery("q2", "none?", "09")]
    qrels = labels_to_qrels(items, docs)
    assert qrels == {"q1": {"docs/02-chunking.md": 1, "docs/02-chunking-more.md": 1}, "q2": {}}
    assert unmatched_labels(items, docs) == [items[1]]
    run = {"q1": {"docs/01-intro.md": 2.0, "docs/02-chunking.md": 1.0}, "q2": {}}
    report = evaluate(run, qrels, ["hit@1", "mrr@10"])
    assert report.mean == {"hit@1": 0.0, "mrr@10": 0.5}
    assert report.excluded_no_relevant == 1


def test_size_sweep_row_estimates_tokens_from_chars():
    row = size_sweep_row(400, [400, 400, 200], 7, 10)
    assert (row.chunks, row.tokens_per_chunk, row.tokens_top3) == (3, pytest.approx(250 / 3), 250)
    assert row.cells() == ("400", "3", "7/10", "83", "250")
    assert row.headers()[3] == "~tok/chunk"
    measured = size_sweep_row(400, [100, 80], 1, 2, top3_lengths=[[100, 80], [80]], unit="chars")
    assert measured.tokens_top3 == pytest.approx((45 + 20) / 2)
    exact = size_sweep_row(400, [90, 110], 2, 2, unit="tokens")
    assert exact.tokens_per_chunk == 100 and exact.headers()[3] == "tok/chunk"
    assert estimate_tokens(10) == 2.5


def test_rows_validate_counts():
    with pytest.raises(ConfigError, match="between 0 and the query count 5"):
        SizeSweepRow(200, 3, 6, 5, 50.0, 150.0)
    with pytest.raises(ConfigError):
        BudgetRow(500, -1, 5, 1.0)
    with pytest.raises(ConfigError, match="unit"):
        size_sweep_row(200, [1], 0, 1, unit="words")  # type: ignore[arg-type]


def test_render_table_aligns_columns():
    rows = [BudgetRow(500, 3, 12, 1.25), BudgetRow(16000, 12, 12, 14.0)]
    assert render_table(rows) == (
        "budget (tok)  answer in context  avg chunks\n"
        "------------  -----------------  ----------\n"
        "         500               3/12         1.2\n"
        "       16000              12/12        14.0\n"
    )


def test_to_markdown_renders_a_pipe_table():
    rows = [size_sweep_row(200, [200, 180], 1, 2), size_sweep_row(1000, [900], 2, 2)]
    lines = to_markdown(rows).splitlines()
    assert lines[0] == "| chunk chars | chunks | top-1 correct | ~tok/chunk | ~tok for top-3 |"
    assert lines[1] == "|------------:|-------:|--------------:|-----------:|---------------:|"
    assert lines[3].split("|")[3].strip() == "2/2"
    assert len({len(line) for line in lines}) == 1


def test_render_rejects_empty_and_mixed_rows():
    with pytest.raises(ConfigError, match="no rows"):
        render_table([])
    with pytest.raises(ConfigError, match="one kind of row"):
        to_markdown([BudgetRow(1, 0, 1, 0.0), size_sweep_row(1, [1], 0, 1)])
    with pytest.raises(ConfigError, match="disagree"):
        render_table([size_sweep_row(1, [1], 0, 1), size_sweep_row(1, [1], 0, 1, unit="tokens")])


QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}, "q3": {"d": 1}, "q0": {"x": 0}}


def test_hit_at_budget_counts_queries_with_an_answer_in_the_selection():
    assert recall_at_budget is hit_at_budget  # the former name still works
    selected = {"q1": ["b", "a", "a"], "q2": ["x"], "q0": ["x"]}  # q3 selected nothing
    assert answered_queries(selected, QRELS) == ["q1"]
    assert hit_at_budget(selected, QRELS) == pytest.approx(1 / 3)
    assert hit_at_budget({"q1": ["a"], "q2": ["c"], "q3": ["d"]}, QRELS) == 1.0


def test_relevant_tokens_share_is_a_mean_over_queries():
    selected = {"q1": [("a", 30), ("b", 10)], "q2": [("c", 5)], "q3": []}
    assert relevant_tokens_share(selected, QRELS) == pytest.approx((0.75 + 1.0 + 0.0) / 3)
    with pytest.raises(InputError, match="negative"):
        relevant_tokens_share({"q1": [("a", -1)]}, QRELS)
    with pytest.raises(InputError, match="no qrels query"):
        hit_at_budget({}, {"q": {"a": 0}})

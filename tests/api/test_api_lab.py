"""``run_lab``'s budget table: ranked as deep as the budget needs, packed as ``sweep`` packs."""

from __future__ import annotations

import json

from ctxselect.api import evaluate
from ctxselect.api.sweep import run_sweep
from ctxselect.eval import SweepGrid


def _write_lab(tmp_path, labels):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"query": q, "label": d}) + "\n" for q, d in labels))
    return path


def test_large_budgets_see_chunks_ranked_below_200(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    for i in range(260):  # 260 chunks that all outrank the one labeled document
        (corpus / f"f{i:03d}.md").write_text(f"apple apple apple orchard note {i:03d}\n")
        (corpus / f"g{i:03d}.md").write_text(f"a grove of pears, note {i:03d}\n")  # idf > 0
    (corpus / "target.md").write_text(
        "apple is mentioned once among many other words like pear plum cherry grape melon "
        "lemon lime kiwi mango papaya\n"
    )
    labels = _write_lab(tmp_path, [("apple", "target")])
    report = evaluate.run_lab(corpus, labels, sizes=(400,), budgets=(100, 100_000))
    small, large = report.budget_rows
    assert small.answer_in_context == 0  # a 100-token selection holds the top chunks only
    assert large.answer_in_context == 1  # the whole corpus fits: the label is inside
    assert large.avg_chunks == 261  # every chunk that matches the query


def _word(n):
    """A made-up word unique to ``n`` (letters only: the tokenizer splits off digits)."""
    letters = ""
    for _ in range(4):
        letters += "bcdfghjklmnpqrstvwz"[n % 19]
        n //= 19
    return letters + "o"


def test_budget_table_agrees_with_sweep_on_the_same_chunks(tmp_path):
    corpus = tmp_path / "docs"
    corpus.mkdir()
    names = ["alpha", "bravo", "charlie", "delta", "echo"]
    names += ["foxtrot", "golf", "hotel", "india", "juliet"]
    for i, name in enumerate(names):  # a query's top chunks are neighbours in one document
        paragraphs = [
            f"{name} " + " ".join(_word(i * 1000 + j * 40 + n) for n in range(40))
            for j in range(10)
        ]
        (corpus / f"{i:02d}.md").write_text(f"# Page {i}\n\n" + "\n\n".join(paragraphs) + "\n")
    labels = _write_lab(tmp_path, [(name, f"{i:02d}") for i, name in enumerate(names[:8])])
    budgets = (200, 300, 600, 1200)
    lab = evaluate.run_lab(corpus, labels, sizes=(400,), budgets=budgets, budget_chunk_chars=400)
    grid = SweepGrid(
        chunkers=("paragraph",), sizes={"paragraph": (400,)}, modes=("tfidf",),
        packers=("greedy",), budgets=budgets, tokenizer="chars4",
    )  # fmt: skip
    run_sweep(corpus, labels, grid=grid, out=tmp_path / "sw", plots=False)
    rows = [json.loads(line) for line in (tmp_path / "sw" / "results.jsonl").open()]
    swept = {r["metric"]: r["value"] for r in rows}
    # neighbours separated by a blank line merge into one piece, framed once, as in sweep
    assert [row.avg_chunks for row in lab.budget_rows] == [swept[f"chunks@{b}t"] for b in budgets]
    assert [row.answer_in_context / row.n_queries for row in lab.budget_rows] == [
        swept[f"hit@{b}t"] for b in budgets
    ]

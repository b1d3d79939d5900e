"""``ctxselect sweep`` names the ids behind each count of what the labels got wrong.

One small BEIR dataset makes every count non-zero: a query with no judged-relevant
document, a judged query the queries file lacks, a judged document not in the corpus and
a judged document with no text. The text line, ``--json`` and ``report.html`` name them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run

from ctxselect.interfaces.cli import experiments  # noqa: F401  (registers sweep)

DOCS = {
    "d1": "The quick brown fox jumps over the lazy dog.",
    "d2": "Apples and oranges are fruits grown in orchards.",
    "d3": "",  # judged relevant, never indexed
    "d4": "Fox hunting with hounds was banned in England long ago.",
}
QUERIES = {"q1": "fox", "q2": "fruits orchards", "q3": "hounds", "q4": "<b>nothing</b>"}
QRELS = [
    "q1\td1\t1",
    "q1\td3\t1",  # empty document
    "q2\td2\t1",
    "q2\t<dx>\t1",  # not in the corpus; an id HTML must escape
    "q3\td4\t1",
    "q4\td1\t0",  # q4: judged, nothing relevant -> excluded
    "q9\td1\t1",  # q9: not in the queries file
]


@pytest.fixture
def swept(tmp_path: Path) -> tuple[dict, str, str]:
    """``sweep --json`` output, the text output and ``report.html`` of one sweep."""
    root = tmp_path / "tiny"
    root.mkdir()
    lines = [json.dumps({"_id": d, "title": "", "text": t}) for d, t in DOCS.items()]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    queries = [json.dumps({"_id": q, "text": t}) for q, t in QUERIES.items()]
    (root / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (root / "qrels.tsv").write_text("\n".join(QRELS) + "\n", encoding="utf-8")
    out = tmp_path / "sw"
    args = [
        "sweep", "--corpus", str(root / "corpus.jsonl"), "--queries",
        str(root / "queries.jsonl"), "--qrels", str(root / "qrels.tsv"), "--chunkers",
        "paragraph", "--sizes", "800", "--modes", "bm25", "--budgets", "500", "--out",
        str(out), "--no-plots",
    ]  # fmt: skip
    data = json.loads(run(*args, "--json").stdout)
    text = run(*args).stdout
    return data, text, (out / "report.html").read_text(encoding="utf-8")


def test_sweep_json_lists_the_ids_behind_each_count(swept) -> None:
    data = swept[0]
    assert (data["excluded_no_relevant"], data["excluded_query_ids"]) == (1, ["q4"])
    assert (data["unknown_queries"], data["unknown_query_ids"]) == (1, ["q9"])
    assert (data["unknown_docs"], data["unknown_doc_ids"]) == (1, ["<dx>"])
    assert (data["empty_docs"], data["empty_doc_ids"]) == (1, ["d3"])


def test_sweep_text_line_names_the_ids(swept) -> None:
    line = swept[1].splitlines()[0]
    assert "1 queries without a judged-relevant document excluded: q4;" in line
    assert "1 judged queries missing from the queries file: q9;" in line
    assert "1 judgments naming documents not in the corpus: <dx>;" in line
    assert "1 judgments of documents that are empty (no text to index): d3)" in line


def test_sweep_html_names_the_ids_escaped(swept) -> None:
    page = swept[2]
    assert "<th>queries excluded (no judged-relevant document)</th><td>1 (q4)</td>" in page
    assert "<th>judged queries missing from the queries file</th><td>1 (q9)</td>" in page
    assert "<th>judgments naming documents not in the corpus</th><td>1 (&lt;dx&gt;)</td>" in page
    assert (
        "<th>judgments of documents that are empty (no text to index)</th><td>1 (d3)</td>" in page
    )
    assert "<dx>" not in page  # every id is escaped, in the summary line too

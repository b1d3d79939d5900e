"""The lab's text: its two tables are the eval layer's ``render_table``, laid out as before."""

from __future__ import annotations

from ctxselect.api.evaluate import LabReport
from ctxselect.eval import BudgetRow, SizeSweepRow
from ctxselect.interfaces.cli import render_measure


def _report(unmatched: tuple[str, ...]) -> LabReport:
    return LabReport(
        corpus="notes",
        n_queries=2,
        mode="bm25",
        packer="greedy",
        tokenizer="chars4",
        budget_chunk_chars=1600,
        size_rows=(
            SizeSweepRow(400, 700, 1, 2, 122.0, 281.0),
            SizeSweepRow(12800, 37, 2, 2, 2316.0, 7399.0),
        ),
        budget_rows=(BudgetRow(500, 1, 2, 1.0), BudgetRow(16000, 2, 2, 12.5)),
        unmatched_labels=unmatched,
    )


TABLES = (
    "Chunk-size sweep on notes (2 labeled queries, paragraph chunks, mode bm25):\n"
    "chunk chars  chunks  top-1 correct  ~tok/chunk  ~tok for top-3\n"
    "-----------  ------  -------------  ----------  --------------\n"
    "        400     700            1/2         122             281\n"
    "      12800      37            2/2        2316            7399\n"
    "\n"
    "Budget table (1600-character chunks, greedy fill, tokens in chars4, framing included):\n"
    "budget (tok)  answer in context  avg chunks\n"
    "------------  -----------------  ----------\n"
    "         500                1/2         1.0\n"
    "       16000                2/2        12.5"
)


def test_lab_report_is_two_tables_with_no_trailing_newline() -> None:
    assert render_measure.lab_report(_report(())) == TABLES


def test_lab_report_ends_with_the_labels_no_document_matches() -> None:
    assert render_measure.lab_report(_report(("07", "12"))) == (
        TABLES + "\nlabels matching no document (those queries can never be answered): 07, 12"
    )

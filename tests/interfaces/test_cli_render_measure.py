"""The lab's, eval's and compare's text: tables, counts and what was measured."""

from __future__ import annotations

import dataclasses

from ctxselect.api.evaluate import EvalResult, LabReport
from ctxselect.eval import BudgetRow, Comparison, MetricComparison, SizeSweepRow
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


def _eval_result(**fields: object) -> EvalResult:
    base: dict[str, object] = {
        "corpus": "cranfield/corpus.jsonl", "mode": "bm25", "index": "ix",
        "metrics": {"ndcg@10": 0.373}, "n_queries": 225, "excluded_no_relevant": 0,
        "missing_from_run": 0, "unknown_docs_in_qrels": 0, "documents": 1398, "chunks": 1412,
        "index_seconds": 0.1, "search_seconds": 1.0, "chunker": "auto", "size": 512,
        "tokenizer": "cl100k",
    }  # fmt: skip
    return EvalResult(**{**base, **fields})  # type: ignore[arg-type]


def test_eval_text_says_how_the_index_was_chunked() -> None:
    first = render_measure.eval_result(_eval_result()).splitlines()[0]
    assert "1412 chunks (auto 512 cl100k), mode bm25" in first
    overlapped = render_measure.eval_result(_eval_result(size=64, overlap=8))
    assert "(auto 64 cl100k, overlap 8)" in overlapped


def test_eval_text_names_unmatched_labels_and_empty_judged_documents() -> None:
    text = render_measure.eval_result(
        _eval_result(excluded_no_relevant=1, unmatched_labels=("07",), empty_docs_in_qrels=1)
    ).splitlines()
    assert "excluded (no judged-relevant document): 1" in text
    assert "labels matching no document (those queries can never be answered): 07" in text
    assert "judged documents that are empty (no text to index): 1" in text
    assert not any(line.startswith("judged documents not in the corpus") for line in text)


def test_comparison_text_says_which_run_was_scored_by_document() -> None:
    row = MetricComparison("ndcg@10", 0.3, 0.3, 0.0, 1.0, 0, 2, 0)
    result = Comparison((row,), 2, 10, 1, 0, 0, 0, "chunk.trec", "doc.trec", ("chunk.trec",))
    text = render_measure.comparison(result)
    assert (
        "chunk.trec ranks chunks (DOC#N ids, as eval --level chunk writes them): scored by "
        "document, each ranked by its best chunk"
    ) in text


def test_eval_text_says_one_document_one_chunk_one_query_in_the_singular() -> None:
    first = render_measure.eval_result(_eval_result(documents=1, chunks=1, n_queries=1))
    assert first.startswith("cranfield/corpus.jsonl: 1 document, 1 chunk (auto 512 cl100k)")
    assert ", 1 query, documents labels" in first.splitlines()[0]
    many = render_measure.eval_result(_eval_result()).splitlines()[0]
    assert "1398 documents, 1412 chunks" in many and "225 queries" in many


def test_lab_and_comparison_text_say_one_labeled_query_in_the_singular() -> None:
    one = dataclasses.replace(_report(()), n_queries=1)
    assert render_measure.lab_report(one).startswith("Chunk-size sweep on notes (1 labeled query,")
    row = MetricComparison("ndcg@10", 0.3, 0.3, 0.0, 1.0, 0, 1, 0)
    result = Comparison((row,), 1, 10, 1, 0, 0, 0, "a.trec", "b.trec")
    assert "; 1 judged query; wins" in render_measure.comparison(result)


def test_eval_text_names_the_first_five_ids_then_an_ellipsis() -> None:
    text = render_measure.eval_result(
        _eval_result(
            unknown_queries_in_qrels=2,
            unknown_query_ids=("q7", "q9"),
            unknown_docs_in_qrels=6,
            unknown_doc_ids=tuple(f"d{i}" for i in range(6)),
            empty_docs_in_qrels=1,
            empty_doc_ids=("995",),
        )
    ).splitlines()
    assert "judged queries missing from the queries file: 2 (q7, q9)" in text
    assert "judged documents not in the corpus: 6 (d0, d1, d2, d3, d4, ...)" in text
    assert "judged documents that are empty (no text to index): 1 (995)" in text


def test_ids_with_control_characters_stay_on_their_line() -> None:
    assert render_measure.first_ids(["a\nb", "c"]) == "a\\nb, c"

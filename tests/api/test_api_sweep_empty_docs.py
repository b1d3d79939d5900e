"""Judged documents with no text: ``sweep`` counts and names them as ``eval`` does."""

from __future__ import annotations

import json

import pytest

from ctxselect.api.evaluate import evaluate_corpus
from ctxselect.api.sweep import run_sweep, sweep_tables
from ctxselect.config import ChunkSpec
from ctxselect.eval import EMPTY_JUDGMENTS_NOTE, SweepGrid

DOCS = {
    "d1": "The quick brown fox jumps over the lazy dog.",
    "d2": "Apples and oranges are fruits grown in orchards.",
    "d3": "",  # judged relevant, yet nothing can ever be retrieved from it
    "d4": "Fox hunting with hounds was banned in England long ago.",
}
GRID = SweepGrid(
    chunkers=("paragraph",),
    sizes={"paragraph": (800,)},
    modes=("bm25",),
    packers=("greedy",),
    budgets=(500,),
)


@pytest.fixture
def dataset(tmp_path):
    """A BEIR dataset folder: one empty document judged relevant, one unknown id."""
    root = tmp_path / "tiny"
    root.mkdir()
    lines = [json.dumps({"_id": d, "title": "", "text": t}) for d, t in DOCS.items()]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    queries = [{"_id": "q1", "text": "fox"}, {"_id": "q2", "text": "fruits orchards"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (root / "qrels.tsv").write_text("q1\td1\t1\nq1\td3\t1\nq2\td2\t1\nq2\tdx\t1\n")
    return root


@pytest.mark.parametrize("as_folder", [False, True], ids=["corpus.jsonl", "dataset-folder"])
def test_sweep_counts_empty_judged_documents_as_eval_does(dataset, tmp_path, as_folder):
    corpus = dataset if as_folder else dataset / "corpus.jsonl"
    queries, qrels = dataset / "queries.jsonl", dataset / "qrels.tsv"
    report = run_sweep(
        corpus, queries, qrels=qrels, grid=GRID, out=tmp_path / "sw", plots=False,
        metrics=("ndcg@10", "recall@100"),
    )  # fmt: skip
    result = evaluate_corpus(
        corpus, queries, qrels, index=tmp_path / "ix", budgets=[500], packer="greedy",
        chunk=ChunkSpec(chunker="paragraph", size=800), metrics=("ndcg@10", "recall@100"),
    )  # fmt: skip
    assert (report.empty_docs, report.unknown_docs) == (1, 1)
    assert (result.empty_docs_in_qrels, result.unknown_docs_in_qrels) == (1, 1)
    assert f"1 {EMPTY_JUDGMENTS_NOTE}" in sweep_tables(report)
    assert EMPTY_JUDGMENTS_NOTE in (tmp_path / "sw" / "report.html").read_text()
    # the empty document stays relevant: neither recall can reach it, both count it missed
    (size,) = report.sizes
    assert size.metrics["recall@100"] == pytest.approx(result.metrics["recall@100"]) == 0.5
    (curve,) = report.curves
    (point,) = curve.points
    assert point.recall == pytest.approx(result.metrics["recall@500t"]) == 0.5


def test_a_corpus_without_empty_documents_reports_none(dataset, tmp_path):
    qrels = dataset / "qrels.tsv"
    qrels.write_text("q1\td1\t1\nq2\td2\t1\nq2\tdx\t1\n")
    report = run_sweep(
        dataset / "corpus.jsonl", dataset / "queries.jsonl", qrels=qrels, grid=GRID,
        out=tmp_path / "sw", plots=False,
    )  # fmt: skip
    assert (report.empty_docs, report.unknown_docs) == (0, 1)
    assert EMPTY_JUDGMENTS_NOTE not in sweep_tables(report)


def test_two_judgments_of_one_empty_document_are_counted_as_judgments(dataset, tmp_path):
    # the note said "2 judged documents that are empty: d6" for one document judged twice
    qrels = dataset / "qrels.tsv"
    empty = "d3"
    qrels.write_text(f"q1\td1\t1\nq1\t{empty}\t1\nq2\t{empty}\t1\n")
    report = run_sweep(
        dataset / "corpus.jsonl", dataset / "queries.jsonl", qrels=qrels, grid=GRID,
        out=tmp_path / "sw", plots=False,
    )  # fmt: skip
    assert (report.empty_docs, report.empty_doc_ids) == (2, (empty,))
    assert f"2 {EMPTY_JUDGMENTS_NOTE}: {empty}" in sweep_tables(report)

"""What ``eval`` and ``compare`` do with their inputs: default index, chunk runs, odd labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxselect.api.evaluate import compare_run_files, default_eval_index, evaluate_corpus
from ctxselect.api.sweep import run_sweep, sweep_tables
from ctxselect.config import ChunkSpec
from ctxselect.errors import InputError
from ctxselect.eval import SweepGrid


def _jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def beir(tmp_path: Path) -> dict[str, Path]:
    """Four documents, long enough that 8-token chunks cut them up, and three queries."""
    words = ["clock", "domain", "crossing", "fifo", "depth", "gray", "code", "reset", "tree"]
    words += ["skew", "jitter"]
    texts = {
        f"d{i}": " ".join(words[(i * 3 + n) % len(words)] for n in range(60)) for i in range(4)
    }
    corpus = _jsonl(tmp_path / "corpus.jsonl", [{"_id": d, "text": t} for d, t in texts.items()])
    questions = {"q1": "clock crossing", "q2": "fifo depth", "q3": "reset tree skew"}
    queries = _jsonl(
        tmp_path / "queries.jsonl", [{"_id": q, "text": t} for q, t in questions.items()]
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\nq2\td1\t1\nq3\td2\t1\n")
    return {"corpus": corpus, "queries": queries, "qrels": qrels, "root": tmp_path}


def test_eval_without_chunk_flags_measures_the_defaults_not_the_last_run(beir, monkeypatch):
    monkeypatch.chdir(beir["root"])
    args = (beir["corpus"], beir["queries"], beir["qrels"])
    first = evaluate_corpus(*args)
    small = evaluate_corpus(*args, chunk=ChunkSpec(chunker="tokens", size=8))
    again = evaluate_corpus(*args)
    assert small.chunks > first.chunks and small.index != first.index
    assert (again.chunks, again.metrics, again.index) == (first.chunks, first.metrics, first.index)
    default = ChunkSpec()
    assert (first.chunker, first.size, first.overlap, first.tokenizer) == (
        default.chunker, default.size, default.overlap, default.tokenizer,
    )  # fmt: skip
    assert (small.chunker, small.size) == ("tokens", 8)
    assert first.index == default_eval_index(beir["corpus"])


def test_compare_scores_a_chunk_run_by_document_as_eval_does(beir):
    small = ChunkSpec(chunker="tokens", size=8)
    args = (beir["corpus"], beir["queries"], beir["qrels"])
    runs = {level: beir["root"] / f"{level}.trec" for level in ("doc", "chunk")}
    scores = {
        level: evaluate_corpus(
            *args, index=beir["root"] / "ix", chunk=small, level=level, run_out=path
        ).metrics
        for level, path in runs.items()
    }
    assert "#" in runs["chunk"].read_text().split()[2]  # DOC#N ids: no document judgment
    metrics = ("ndcg@10", "recall@100")  # eval's default metrics
    result = compare_run_files(
        runs["chunk"], runs["doc"], beir["qrels"], metrics=metrics, permutations=10
    )
    assert result.by_document == (str(runs["chunk"]),)
    for row in result.metrics:  # the chunk run scores as eval --level doc scored its index
        assert row.mean_a == pytest.approx(scores["doc"][row.metric])
        assert row.mean_b == pytest.approx(scores["doc"][row.metric])
    same = compare_run_files(runs["doc"], runs["doc"], beir["qrels"], permutations=10)
    assert same.by_document == ()


def test_eval_and_sweep_name_the_labels_that_match_no_document(beir):
    labels = _jsonl(
        beir["root"] / "lab.jsonl",
        [{"query": "clock crossing", "label": "d0"}, {"query": "fifo", "label": "d9-typo"}],
    )
    result = evaluate_corpus(beir["corpus"], labels, index=beir["root"] / "ix")
    assert (result.n_queries, result.excluded_no_relevant) == (1, 1)
    assert result.unmatched_labels == ("d9-typo",)
    grid = SweepGrid(chunkers=("tokens",), sizes={"tokens": (64,)}, budgets=(200,))
    report = run_sweep(beir["corpus"], labels, grid=grid, out=beir["root"] / "sw", plots=False)
    assert report.unmatched_labels == ("d9-typo",)
    assert "labels matching no document: d9-typo" in sweep_tables(report)
    assert "d9-typo" in (beir["root"] / "sw" / "report.html").read_text()


def test_judgments_of_empty_documents_are_counted_as_empty_not_unknown(beir):
    with beir["corpus"].open("a") as handle:  # as Cranfield's 471 and 995
        handle.write(json.dumps({"_id": "d8", "title": "", "text": " "}) + "\n")
    with beir["qrels"].open("a") as handle:
        handle.write("q1\td8\t1\nq2\td8\t1\nq3\td7\t1\n")  # d7: not in the corpus at all
    result = evaluate_corpus(
        beir["corpus"], beir["queries"], beir["qrels"], index=beir["root"] / "ix"
    )
    assert (result.empty_docs_in_qrels, result.unknown_docs_in_qrels) == (2, 1)


def test_an_empty_folder_document_is_counted_as_empty(tmp_path):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "full.md").write_text("budgets cap the context\n")
    (corpus / "blank.md").write_text("\n  \n")
    queries = _jsonl(tmp_path / "q.jsonl", [{"_id": "q1", "text": "budgets"}])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\tfull.md\t1\nq1\tblank.md\t1\n")
    result = evaluate_corpus(corpus, queries, qrels, index=tmp_path / "ix")
    assert (result.empty_docs_in_qrels, result.unknown_docs_in_qrels) == (1, 0)


def test_an_empty_queries_file_is_named_as_empty(beir):
    empty = beir["root"] / "e.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match=r"queries file .*e\.jsonl holds no queries: it is empty"):
        evaluate_corpus(beir["corpus"], empty, beir["qrels"], index=beir["root"] / "ix")


@pytest.mark.parametrize("flag", ["run_out", "per_query_out"])
@pytest.mark.parametrize("which", ["corpus", "queries", "qrels"])
def test_an_output_over_an_input_is_refused_and_the_input_kept(beir, flag, which):
    before = beir[which].read_bytes()
    args = (beir["corpus"], beir["queries"], beir["qrels"])
    with pytest.raises(InputError, match=f"is the --{which} file: writing it would overwrite"):
        evaluate_corpus(*args, index=beir["root"] / "ix", **{flag: beir[which]})
    assert beir[which].read_bytes() == before
    assert not (beir["root"] / "ix").exists()  # refused before any work


def test_the_run_and_the_per_query_file_must_differ(beir):
    args = (beir["corpus"], beir["queries"], beir["qrels"])
    same = beir["root"] / "out.txt"
    with pytest.raises(InputError, match=r"--per-query .*out\.txt is the --run-out file"):
        evaluate_corpus(*args, index=beir["root"] / "ix", run_out=same, per_query_out=same)


def test_an_output_inside_a_corpus_folder_is_refused(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("clock domain crossing\n", encoding="utf-8")
    queries = _jsonl(tmp_path / "q.jsonl", [{"_id": "q1", "text": "clock"}])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\ta.md\t1\n", encoding="utf-8")
    inside = folder / "p.jsonl"  # the next run would load it as a BEIR corpus
    with pytest.raises(InputError, match=r"lies inside the --corpus folder .*docs: the next run"):
        evaluate_corpus(folder, queries, qrels, index=tmp_path / "ix", per_query_out=inside)


def test_compare_names_the_run_that_is_empty_or_shares_no_query(beir):
    good = beir["root"] / "good.trec"
    good.write_text("q1 Q0 d0 1 2.0 x\nq2 Q0 d1 1 1.0 x\n", encoding="utf-8")
    empty = beir["root"] / "empty.trec"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"run .*empty\.trec holds no ranking: it is empty"):
        compare_run_files(good, empty, beir["qrels"])
    other = beir["root"] / "other.trec"
    other.write_text("x9 Q0 d0 1 2.0 x\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"run .*other\.trec shares no query id with the qrels"):
        compare_run_files(other, good, beir["qrels"])


def test_outputs_may_go_inside_a_beir_dataset_folder(tmp_path):
    # a dataset folder is read only for its corpus.jsonl, so runs kept beside it are safe
    dataset = tmp_path / "mini"
    dataset.mkdir()
    _jsonl(dataset / "corpus.jsonl", [{"_id": "d1", "text": "clock domain crossing"}])
    queries = _jsonl(dataset / "queries.jsonl", [{"_id": "q1", "text": "clock"}])
    qrels = dataset / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    run = dataset / "runs" / "bm25.trec"
    evaluate_corpus(dataset, queries, qrels, index=tmp_path / "ix", run_out=run)
    assert run.read_text(encoding="utf-8").startswith("q1 Q0 d1 1 ")

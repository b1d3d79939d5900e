"""A user's own label files: TSV queries, ids a TREC run cannot hold."""

from __future__ import annotations

import json

import pytest

from ctxselect.api import evaluate as experiments
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import is_labeled_file, read_queries


def test_tsv_queries_read_as_their_jsonl_twin(tmp_path):
    pairs = {"1": "what is a knee", "q 2": "größe der chunks", "3": "tabs\tinside text"}
    jsonl, tsv = tmp_path / "q.jsonl", tmp_path / "q.tsv"
    jsonl.write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in pairs.items()))
    tsv.write_text("_id\ttext\n" + "".join(f"{q}\t{t}\n" for q, t in pairs.items()))
    assert read_queries(tsv) == read_queries(jsonl) == pairs
    assert not is_labeled_file(tsv)


def test_tsv_queries_refuse_a_line_without_text_and_a_repeated_id(tmp_path):
    tsv = tmp_path / "q.tsv"
    tsv.write_text("1\tfirst\n2\t  \n")
    with pytest.raises(InputError, match=r"q\.tsv:2: query '2' has an empty text"):
        read_queries(tsv)
    tsv.write_text("1\tfirst\n1\tagain\n")
    with pytest.raises(InputError, match="query id '1' appears twice"):
        read_queries(tsv)


def _spaced_corpus(tmp_path):
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "budget notes.md").write_text("# Budget\n\nThe knee of the budget curve.\n")
    (corpus / "chunks.md").write_text("# Chunks\n\nChunk size and overlap settings.\n")
    queries, qrels = tmp_path / "q.jsonl", tmp_path / "qrels.tsv"
    queries.write_text(json.dumps({"_id": "q1", "text": "knee of the budget"}) + "\n")
    qrels.write_text("q1\tbudget notes.md\t1\n")
    return corpus, queries, qrels


def test_run_out_with_spaced_document_ids_is_refused_before_ranking(tmp_path, monkeypatch):
    corpus, queries, qrels = _spaced_corpus(tmp_path)
    run_out = tmp_path / "run.trec"

    def ranked(*_args):
        raise AssertionError("ranked before the run's ids were checked")

    monkeypatch.setattr(experiments, "score_labeled", ranked)
    with pytest.raises(ConfigError) as caught:
        experiments.evaluate_corpus(corpus, queries, qrels, index=tmp_path / "ix", run_out=run_out)
    message = str(caught.value)
    assert "1 document ids hold whitespace (e.g. 'budget notes.md')" in message
    assert "rename those document ids, or leave --run-out out" in message
    assert not run_out.exists()


def test_spaced_ids_still_evaluate_without_a_run(tmp_path):
    corpus, queries, qrels = _spaced_corpus(tmp_path)
    result = experiments.evaluate_corpus(
        corpus, queries, qrels, index=tmp_path / "ix", metrics=("hit@1",)
    )
    assert result.metrics == {"hit@1": 1.0}

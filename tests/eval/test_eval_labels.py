"""Labels independent of chunking: span files, the overlap rule, chunk judgments, counts."""

from __future__ import annotations

import json

import pytest

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import Labels, Span, load_labeled_set, read_spans


def write(tmp_path, name: str, lines: list[object]) -> str:
    path = tmp_path / name
    text = "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines)
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_read_spans_defaults_grade_to_one_and_accepts_numeric_ids(tmp_path):
    path = write(
        tmp_path,
        "spans.jsonl",
        [
            {"qid": "q1", "doc_id": "a.md", "start": 0, "end": 10, "grade": 2},
            {"qid": 7, "doc_id": "b.md", "start": 5, "end": 6},
        ],
    )
    assert read_spans(path) == [Span("q1", "a.md", 0, 10, 2), Span("7", "b.md", 5, 6, 1)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not json", "expected a JSON object"),
        ('{"qid": "q", "doc_id": "d", "start": 3}', "expected a JSON object"),
        ('{"qid": "q", "doc_id": "d", "start": 5, "end": 5}', "expected 0 <= start < end"),
        ('{"qid": "q", "doc_id": "d", "start": -1, "end": 5}', "expected 0 <= start < end"),
        ('{"qid": "q", "doc_id": "d", "start": 0, "end": 5, "grade": "A"}', "expected a JSON"),
    ],
)
def test_malformed_span_lines_name_file_and_line(tmp_path, line, expected):
    good = {"qid": "q", "doc_id": "d", "start": 0, "end": 1}
    path = write(tmp_path, "spans.jsonl", [good, line])
    with pytest.raises(InputError) as caught:
        read_spans(path)
    assert f"{path}:2: {expected}" in str(caught.value)


def span_labels() -> Labels:
    return Labels.from_spans(
        [
            Span("q", "d", 10, 20, 1),
            Span("q", "d", 15, 30, 3),
            Span("q", "d", 50, 60, 0),
            Span("q", "e", 0, 5, 2),
        ]
    )


def test_a_chunk_is_relevant_when_it_overlaps_a_relevant_span():
    labels = span_labels()
    assert labels.kind == "spans"
    assert labels.qrels == {"q": {"d": 3, "e": 2}}  # best span grade per document
    assert labels.grade("q", "d", 0, 10) == 0  # ends where the span starts: no overlap
    assert labels.grade("q", "d", 0, 11) == 1
    assert labels.grade("q", "d", 18, 19) == 3  # inside both: the higher grade
    assert labels.grade("q", "d", 30, 50) == 0
    assert labels.grade("q", "d", 55, 58) == 0  # a grade-0 span is not relevant
    assert labels.grade("q", "x", 0, 100) == 0 and labels.grade("other", "d", 0, 100) == 0


def test_relevant_chars_count_the_union_of_relevant_spans():
    labels = span_labels()
    assert labels.relevant_chars("q", "d", 0, 100) == 20  # [10, 30) once, not 10 + 15
    assert labels.relevant_chars("q", "d", 12, 16) == 4
    assert labels.relevant_chars("q", "d", 25, 55) == 5  # the grade-0 span adds nothing
    doc_labels = Labels.from_qrels({"q": {"d": 1, "e": 0}})
    assert doc_labels.relevant_chars("q", "d", 3, 9) == 6
    assert doc_labels.relevant_chars("q", "e", 3, 9) == 0


def test_chunk_qrels_follow_documents_or_spans():
    ids, docs = ["d#0", "d#1", "d#2", "e#0", "f#0"], ["d", "d", "d", "e", "f"]
    starts, ends = [0, 12, 40, 0, 0], [12, 40, 70, 9, 9]
    assert span_labels().chunk_qrels(ids, docs, starts, ends) == {
        "q": {"d#0": 1, "d#1": 3, "e#0": 2}
    }
    by_doc = Labels.from_qrels({"q": {"d": 2}, "none": {"f": 0}})
    assert by_doc.chunk_qrels(ids, docs, starts, ends) == {"q": {"d#0": 2, "d#1": 2, "d#2": 2}}


def test_spans_beyond_text_are_counted_for_known_documents():
    assert span_labels().spans_beyond({"d": 25, "e": 100}) == 2  # both d spans end past 25
    assert span_labels().spans_beyond({}) == 0


@pytest.fixture
def beir_files(tmp_path):
    queries = write(
        tmp_path,
        "queries.jsonl",
        [
            {"_id": "q1", "text": "alpha"},
            {"_id": "q2", "text": "beta"},
            {"_id": "q3", "text": "gamma"},
        ],
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(
        "query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tghost\t1\nq2\tb\t0\nq9\ta\t1\n",
        encoding="utf-8",
    )
    return queries, str(qrels)


def test_labeled_set_counts_what_does_not_fit(beir_files):
    queries, qrels = beir_files
    labeled = load_labeled_set(queries, qrels, None, {"a", "b"}, lambda d: 10)
    assert labeled.queries == {"q1": "alpha"}
    assert labeled.excluded_no_relevant == 2  # q2 judged only 0, q3 not judged
    assert labeled.unknown_queries == 1  # q9 is judged but not in the queries file
    assert labeled.unknown_docs == 1  # q1 -> ghost
    assert labeled.labels.kind == "documents" and "q9" not in labeled.labels.qrels


def test_labeled_set_from_spans_and_from_lab_jsonl(tmp_path, beir_files):
    queries, qrels = beir_files
    spans = write(
        tmp_path,
        "spans.jsonl",
        [
            {"qid": "q2", "doc_id": "b", "start": 0, "end": 40},
            {"qid": "q2", "doc_id": "zz", "start": 0, "end": 4},
        ],
    )
    labeled = load_labeled_set(queries, None, spans, {"a", "b"}, {"b": 30}.__getitem__)
    assert labeled.queries == {"q2": "beta"} and labeled.spans_beyond_text == 1
    assert labeled.unknown_docs == 1 and labeled.labels_file == spans
    lab = write(
        tmp_path, "lab.jsonl", [{"query": "x", "label": "02"}, {"query": "y", "label": "99"}]
    )
    labeled = load_labeled_set(lab, None, None, {"docs/02-a.md", "03.md"}, len)
    assert labeled.labels.qrels == {"q1": {"docs/02-a.md": 1}, "q2": {}}
    assert labeled.queries == {"q1": "x"} and labeled.excluded_no_relevant == 1
    assert (
        labeled.content_hash() != load_labeled_set(queries, qrels, None, {"a"}, len).content_hash()
    )


def test_labeled_set_errors(tmp_path, beir_files):
    queries, qrels = beir_files
    with pytest.raises(ConfigError, match="not both"):
        load_labeled_set(queries, qrels, qrels, {"a"}, len)
    with pytest.raises(ConfigError, match="holds no labels"):
        load_labeled_set(queries, None, None, {"a"}, len)
    none = tmp_path / "none.tsv"
    none.write_text("q1\ta\t0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no query of .* has a judged-relevant document"):
        load_labeled_set(queries, str(none), None, {"a"}, len)


def test_lab_labels_that_match_no_document_are_named(tmp_path):
    # the message spoke of query ids and a grade column, which lab JSONL does not have
    lab = write(tmp_path, "lab.jsonl", [{"query": f"q{i}", "label": f"9{i}"} for i in range(7)])
    with pytest.raises(InputError) as caught:
        load_labeled_set(lab, None, None, {"docs/02-a.md", "03.md"}, len)
    message = str(caught.value)
    assert "no label of" in message and "matches a document of the corpus ('90', '91'" in message
    assert "'94' and 2 more)" in message and "grade" not in message

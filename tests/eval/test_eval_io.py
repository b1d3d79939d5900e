"""File formats: BEIR queries and qrels, TREC qrels and runs, the lab's labeled JSONL."""

from __future__ import annotations

import csv
import itertools
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.errors import InputError
from ctxselect.eval import (
    LabeledQuery,
    detect_qrels_format,
    load_beir_split,
    load_qrels,
    rank,
    read_beir_qrels,
    read_labeled,
    read_queries,
    read_trec_qrels,
    read_trec_run,
    write_trec_qrels,
    write_trec_run,
)


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- qrels ---


def test_beir_qrels_with_header_and_trec_qrels_read_the_same(tmp_path):
    beir = write(tmp_path, "q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t2\n")
    trec = write(tmp_path, "q.trec", "q1 0 d1 1\nq1 0 d2 0\n\nq2  Q0\td1 2\n")
    expected = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}
    assert detect_qrels_format(beir) == "beir"
    assert detect_qrels_format(trec) == "trec"
    assert load_qrels(beir) == expected
    assert load_qrels(trec) == expected


def test_beir_qrels_header_is_optional_and_comments_are_skipped(tmp_path):
    path = write(tmp_path, "q.tsv", "# judged by hand\nq1\td 1\t1\n")
    assert load_qrels(path) == {"q1": {"d 1": 1}}  # a tab-separated id may hold a space


def test_integral_float_grade_is_accepted(tmp_path):
    assert read_trec_qrels(write(tmp_path, "q", "q1 0 d1 2.0\n")) == {"q1": {"d1": 2}}


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n", 3, "3 tab-separated fields"),
        ("q1\td1\t1\nq1\td2\thigh\n", 2, "score an integer"),
        ("q1\td1\t1.5\n", 1, "score an integer"),
    ],
)
def test_malformed_beir_line_names_file_line_and_format(tmp_path, text, line, expected):
    path = write(tmp_path, "bad.tsv", text)
    with pytest.raises(InputError, match=rf"bad\.tsv:{line}: expected .*{expected}"):
        load_qrels(path)


def test_malformed_trec_qrels_line_names_file_and_line(tmp_path):
    path = write(tmp_path, "bad.trec", "q1 0 d1 1\nq1 0 d2\n")
    with pytest.raises(InputError, match=r"bad\.trec:2: expected 4 whitespace-separated"):
        load_qrels(path)


def test_a_four_column_tsv_without_header_is_not_misread_as_trec(tmp_path):
    # read as TREC, the grade column became the doc id and every metric came out 0
    path = write(tmp_path, "x4.tsv", "q1\td3\t2\t7\nq2\td2\t1\t7\n")
    with pytest.raises(InputError, match=r"x4\.tsv:1: the second field .* is the iteration"):
        load_qrels(path)
    for iteration in ("0", "1", "Q0"):  # what TREC files hold there
        trec = write(tmp_path, "ok.trec", f"q1 {iteration} d1 1\n")
        assert load_qrels(trec) == {"q1": {"d1": 1}}


def test_unknown_qrels_format_and_empty_file_are_input_errors(tmp_path):
    with pytest.raises(InputError, match=r"odd:1: expected 3 tab-separated .* or 4 whitespace"):
        load_qrels(write(tmp_path, "odd", "a b c d e\n"))
    with pytest.raises(InputError, match="empty"):
        load_qrels(write(tmp_path, "empty", "\n\n"))
    with pytest.raises(InputError, match="does not exist"):
        load_qrels(tmp_path / "nowhere.tsv")


def test_conflicting_duplicate_judgment_is_rejected_but_repeat_is_fine(tmp_path):
    assert read_beir_qrels(write(tmp_path, "ok", "q\td\t1\nq\td\t1\n")) == {"q": {"d": 1}}
    with pytest.raises(InputError, match=r"bad:2: .*judged 2 here but 1 on line 1"):
        read_beir_qrels(write(tmp_path, "bad", "q\td\t1\nq\td\t2\n"))


def test_write_trec_qrels_round_trips(tmp_path):
    qrels = {"q2": {"b": 0, "a": 3}, "q1": {"x": 1}}
    path = tmp_path / "out.qrels"
    write_trec_qrels(path, qrels)
    assert path.read_text().splitlines()[0] == "q1 0 x 1"
    assert read_trec_qrels(path) == qrels


def test_real_scifact_qrels_match_a_plain_csv_reading(scifact_dir):
    path = scifact_dir / "qrels" / "test.tsv"
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))[1:]
    expected: dict[str, dict[str, int]] = {}
    for qid, doc_id, score in rows:
        expected.setdefault(qid, {})[doc_id] = int(score)
    assert load_qrels(path) == expected
    assert len(expected) == 300


# --- queries and BEIR split ---


def test_read_queries_keeps_order_and_accepts_numeric_ids(tmp_path):
    path = write(
        tmp_path, "queries.jsonl", '{"_id": "b", "text": "two"}\n{"_id": 7, "text": "x"}\n'
    )
    assert list(read_queries(path).items()) == [("b", "two"), ("7", "x")]


@pytest.mark.parametrize(
    "line", ['{"_id": "a"}', "not json", '["a", "b"]', '{"_id": "", "text": "t"}']
)
def test_malformed_query_line_is_an_input_error(tmp_path, line):
    path = write(tmp_path, "queries.jsonl", '{"_id": "ok", "text": "fine"}\n' + line + "\n")
    with pytest.raises(InputError, match=r"queries\.jsonl:2: expected a JSON object"):
        read_queries(path)


@pytest.mark.parametrize(
    ("name", "text"), [("q.jsonl", '{"_id": "q9", "text": "  "}\n'), ("q.tsv", "q9\t \n")]
)
def test_a_query_with_an_empty_text_says_so(tmp_path, name, text):
    # it got the generic "expected a JSON object" message
    path = write(tmp_path, name, text)
    with pytest.raises(InputError, match=r"q\.(jsonl|tsv):1: query 'q9' has an empty text"):
        read_queries(path)


def test_duplicate_query_id_is_an_input_error(tmp_path):
    path = write(tmp_path, "q.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n')
    with pytest.raises(InputError, match="appears twice"):
        read_queries(path)


def test_load_beir_split_on_real_scifact(scifact_dir):
    queries, qrels = load_beir_split(scifact_dir, "test")
    assert set(queries) == set(qrels)
    assert len(queries) == 300
    assert all(text.strip() for text in queries.values())


def test_load_beir_split_keeps_only_judged_queries_and_names_missing_split(tmp_path):
    write(tmp_path, "queries.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "2", "text": "b"}\n')
    (tmp_path / "qrels").mkdir()
    write(tmp_path / "qrels", "test.tsv", "query-id\tcorpus-id\tscore\n2\td\t1\n")
    assert load_beir_split(tmp_path) == ({"2": "b"}, {"2": {"d": 1}})
    with pytest.raises(InputError, match=r"split 'dev'.*splits found: test"):
        load_beir_split(tmp_path, "dev")
    write(tmp_path / "qrels", "train.tsv", "3\td\t1\n")
    with pytest.raises(InputError, match=r"judges 1 queries missing .* \(e\.g\. 3\)"):
        load_beir_split(tmp_path, "train")


# --- labeled JSONL ---


def test_read_labeled_numbers_queries_without_qid_by_position(tmp_path):
    path = write(
        tmp_path,
        "lab.jsonl",
        '{"query": "how big?", "label": "02"}\n\n'
        '{"query": "why?", "label": "03-x.md", "qid": "why"}\n'
        '{"query": "when?", "label": " 04 "}\n',
    )
    assert read_labeled(path) == [
        LabeledQuery("q1", "how big?", "02"),
        LabeledQuery("why", "why?", "03-x.md"),
        LabeledQuery("q3", "when?", "04"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        '{"query": "q", "label": 2}',
        '{"query": "q"}',
        '{"label": "02"}',
        '{"query": "q", "label": ""}',
    ],
)
def test_malformed_labeled_line_is_an_input_error(tmp_path, line):
    path = write(tmp_path, "lab.jsonl", line + "\n")
    with pytest.raises(InputError, match=r'lab\.jsonl:1: expected a JSON object \{"query"'):
        read_labeled(path)


def test_generated_qid_clashing_with_explicit_one_is_rejected(tmp_path):
    path = write(
        tmp_path,
        "lab.jsonl",
        '{"query": "a", "label": "1", "qid": "q2"}\n{"query": "b", "label": "2"}\n',
    )
    with pytest.raises(InputError, match=r"lab\.jsonl:2: query id 'q2' appears twice"):
        read_labeled(path)


# --- TREC runs ---


def test_write_then_read_run_keeps_order_and_untied_scores(tmp_path):
    run = {"q2": {"a": 0.5, "b": 2.25, "c": 0.5}, "q1": {"x": 1.0}}
    path = tmp_path / "run.trec"
    write_trec_run(path, run, tag="bm25")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 x 1 1.0 bm25"
    assert [line.split()[2] for line in lines[1:]] == ["b", "a", "c"]
    back = read_trec_run(path)
    assert back["q2"]["b"] == 2.25 and back["q2"]["a"] == 0.5
    assert back["q2"]["c"] < 0.5  # the tie was moved down, not reordered
    assert [d for d, _ in rank(back["q2"])] == [d for d, _ in rank(run["q2"])]


def test_write_run_cut_to_k(tmp_path):
    path = tmp_path / "run.trec"
    write_trec_run(path, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, k=2)
    assert [line.split()[2] for line in path.read_text().splitlines()] == ["a", "b"]


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text("abcXYZ-_0123", min_size=1, max_size=4),
        st.one_of(
            st.sampled_from([0.0, 1.0, 1e-9, 1.0 + 1e-12, -2.0]),
            st.floats(min_value=-1e30, max_value=1e30, allow_nan=False),
        ),
        max_size=30,
    )
)
def test_written_scores_are_strictly_decreasing_in_single_precision(tmp_path_factory, scores):
    path = tmp_path_factory.mktemp("w") / "run.trec"
    write_trec_run(path, {"q": scores})
    lines = path.read_text().splitlines()
    written = [float(line.split()[4]) for line in lines]
    single = [struct.unpack("<f", struct.pack("<f", s))[0] for s in written]
    assert all(a > b for a, b in itertools.pairwise(single))
    assert [line.split()[2] for line in lines] == [d for d, _ in rank(scores)]
    assert [int(line.split()[3]) for line in lines] == list(range(1, len(lines) + 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("q Q0 d 1 0.5\n", "6 whitespace-separated fields"),
        ("q Q0 d one 0.5 tag\n", "6 whitespace-separated fields"),
        ("q Q0 d 1 nan tag\n", "score a number"),
    ],
)
def test_malformed_run_line_is_an_input_error(tmp_path, text, expected):
    path = write(tmp_path, "bad.run", "q Q0 ok 1 1.0 t\n" + text)
    with pytest.raises(InputError, match=rf"bad\.run:2: expected .*{expected}"):
        read_trec_run(path)


def test_duplicate_document_in_run_is_an_input_error(tmp_path):
    path = write(tmp_path, "dup.run", "q Q0 d 1 1.0 t\nq Q0 d 2 0.5 t\n")
    with pytest.raises(InputError, match=r"dup\.run:2: document 'd' appears twice"):
        read_trec_run(path)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"q 1": {"d": 1.0}}, "query id 'q 1'"),
        ({"q": {"d x": 1.0}}, "document id 'd x'"),
        ({"q": {"d": math.inf}}, "needs finite scores"),
        ({"q": {"d": 1e39}}, "beyond single precision"),
        ({"q": {"d": math.nan}}, "NaN"),
    ],
)
def test_unwritable_runs_are_input_errors(tmp_path, run, message):
    with pytest.raises(InputError, match=message):
        write_trec_run(tmp_path / "x.run", run)

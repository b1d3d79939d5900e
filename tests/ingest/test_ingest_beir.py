"""BEIR corpora: .jsonl files, dataset folders, error messages, and the real SciFact corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxselect.errors import InputError
from ctxselect.ingest import content_hash, load_paths


def jsonl(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


CORPUS = [
    {"_id": "d2", "title": "Second", "text": "two\r\nlines"},
    {"_id": "d1", "title": "First", "text": "one"},
    {"_id": 7, "text": "integer id, no title"},
]


def test_beir_jsonl_yields_one_document_per_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl(CORPUS) + "\n", encoding="utf-8")
    result = load_paths(path)
    docs = {d.doc_id: d for d in result.documents}
    assert [d.doc_id for d in result.documents] == ["7", "d1", "d2"]
    assert docs["d2"].title == "Second"
    assert docs["d2"].text == "two\nlines"
    assert docs["d2"].kind == "beir"
    assert docs["d2"].source == f"{path}:1"
    assert docs["7"].title == ""
    assert docs["d1"].content_hash == content_hash("First", "one")
    assert result.report.loaded == 3


def test_beir_records_that_are_empty_or_too_large_are_counted(tmp_path: Path) -> None:
    records = [
        {"_id": "a", "title": "", "text": "  "},
        {"_id": "b", "title": "Title only", "text": ""},
        {"_id": "c", "title": "", "text": "x" * 500},
        {"_id": "d", "title": "", "text": "ok"},
    ]
    (tmp_path / "c.jsonl").write_text(jsonl(records), encoding="utf-8")
    result = load_paths(tmp_path, max_bytes=200)
    assert [d.doc_id for d in result.documents] == ["b", "d"]
    assert (result.report.empty, result.report.too_large) == (1, 1)
    size = len(json.dumps(records[2])) + 1
    why = f"too large: {size:,} bytes > --max-bytes 200"
    assert result.report.skipped_files == ((f"{tmp_path / 'c.jsonl'}:3", why),)
    assert f"c.jsonl:3 ({why})" in result.report.summary()


@pytest.mark.parametrize("name", ["corpus.jsonl", "walked/corpus.jsonl"])
def test_a_corpus_opening_with_a_utf8_bom_loads_whole(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\xef\xbb\xbf" + jsonl(CORPUS).encode())
    result = load_paths(path if "/" not in name else path.parent)
    assert [d.doc_id for d in result.documents] == ["7", "d1", "d2"]
    assert (result.report.unsupported, result.report.unreadable) == (0, ())


@pytest.mark.parametrize("bad_id", ["", "  "])
def test_an_empty_id_is_a_bad_line(tmp_path: Path, bad_id: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl([CORPUS[1], {"_id": bad_id, "text": "no id"}]), encoding="utf-8")
    with pytest.raises(InputError, match=f'{path}:2: "_id" is empty.*give that line an id'):
        load_paths(path)
    walked = load_paths(tmp_path)
    assert [d.doc_id for d in walked.documents] == ["d1"]
    assert "line 2:" in walked.report.unreadable[0][1]


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl(CORPUS[:2]) + '{"_id": "x", "text": \n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_paths(path)
    message = str(info.value)
    assert f"{path}:3" in message
    assert "invalid JSON" in message and '"_id" and "text"' in message


def test_non_beir_jsonl_given_explicitly_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('\n{"event": "click", "at": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"events\.jsonl:2: not a BEIR corpus record.*'at'"):
        load_paths(path)


def test_non_beir_jsonl_inside_a_folder_is_skipped_as_unsupported(tmp_path: Path) -> None:
    (tmp_path / "queries.jsonl").write_text('{"query": "q", "label": "01"}\n', encoding="utf-8")
    (tmp_path / "01-intro.md").write_text("# Intro\n\nText.\n", encoding="utf-8")
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["01-intro.md"]
    assert result.report.unsupported == 1


def test_record_missing_text_later_in_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl([*CORPUS, {"_id": "z", "title": "no text"}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"corpus\.jsonl:4"):
        load_paths(path)


def test_bad_lines_of_a_corpus_met_in_a_folder_are_skipped_and_the_file_named(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("good emu\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "export.jsonl"
    bad = ["{broken", json.dumps({"_id": "b", "title": 5, "text": "x"})]
    path.write_text(jsonl([CORPUS[1]]) + "\n".join(bad) + "\n" + jsonl([CORPUS[0]]), "utf-8")
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["d1", "d2", "notes.txt"]
    assert result.documents[1].source == f"{path}:4"  # line numbers stay those of the file
    [(named, why)] = result.report.unreadable
    assert named == str(path)
    assert why.startswith("2 bad lines not indexed (the other records were); first: line 2: ")
    assert "invalid JSON" in why and "fix or remove that line" in why
    path.write_text(jsonl([CORPUS[1]]) + bad[1] + "\n", "utf-8")
    [(_, why)] = load_paths(tmp_path).report.unreadable
    assert why.startswith("1 bad line not indexed (the other records were): line 2: ")
    assert '"title" and "text" must be strings, found int' in why
    with pytest.raises(InputError, match=r"export\.jsonl:2: \"title\" and \"text\" must be"):
        load_paths(path)  # named explicitly: the hard error stays


def test_duplicate_beir_ids_are_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl([CORPUS[1], CORPUS[1]]), encoding="utf-8")
    with pytest.raises(InputError, match=r"duplicate doc_id 'd1'.*corpus\.jsonl:1.*:2"):
        load_paths(path)


def test_invalid_utf8_and_lone_surrogates_in_records_are_replaced(tmp_path: Path) -> None:
    raw = b'{"_id": "a", "text": "caf\xe9"}\n{"_id": "b", "text": "x\\ud800y"}\n'
    (tmp_path / "corpus.jsonl").write_bytes(raw)
    result = load_paths(tmp_path)
    texts = {d.doc_id: d.text for d in result.documents}
    assert texts == {"a": "caf\ufffd", "b": "x\ufffdy"}
    assert result.report.decoded_with_replacement == 2
    corpus = str(tmp_path / "corpus.jsonl")
    assert result.report.replaced_files == (f"{corpus}:1", f"{corpus}:2")
    assert f"U+FFFD: {corpus}:1, {corpus}:2." in result.report.summary()


def test_beir_dataset_folder_loads_only_the_corpus(tmp_path: Path) -> None:
    dataset = tmp_path / "mini"
    (dataset / "qrels").mkdir(parents=True)
    (dataset / "corpus.jsonl").write_text(jsonl(CORPUS), encoding="utf-8")
    (dataset / "queries.jsonl").write_text(jsonl([{"_id": "q1", "text": "what"}]))
    (dataset / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (dataset / "README.md").write_text("# about the data")
    result = load_paths(dataset)
    assert [d.doc_id for d in result.documents] == ["7", "d1", "d2"]
    assert {d.kind for d in result.documents} == {"beir"}
    nested = load_paths(tmp_path)  # a dataset folder found inside a tree is read the same way
    assert [d.doc_id for d in nested.documents] == ["7", "d1", "d2"]


@pytest.mark.data
def test_scifact_corpus_loads_with_known_titles(scifact_dir: Path) -> None:
    result = load_paths(scifact_dir / "corpus.jsonl")
    assert len(result.documents) == 5183
    assert result.report.loaded == 5183
    assert result.report.unreadable == ()
    docs = {d.doc_id: d for d in result.documents}
    assert docs["4983"].title.startswith("Microstructural development of human newborn")
    assert docs["4983"].source.endswith("corpus.jsonl:1")
    folder = load_paths(scifact_dir)
    assert [d.content_hash for d in folder.documents] == [d.content_hash for d in result.documents]

"""Identifier-aware analysis: splitting, matching words to parts, explain's form, and
indexes built before it (they search exactly as before)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ctxselect as cs
from ctxselect.config import BM25Params
from ctxselect.errors import IndexMismatchError
from ctxselect.manifest import Manifest
from ctxselect.retrieve import BM25Retriever
from ctxselect.retrieve.analyze import BM25Analyzer, identifier_parts
from ctxselect.types import Chunk, ChunkTable, Document

CODE = [
    "def parseHttpHeader(line):\n    return line.partition(':')",
    "MAX_RESULT_TOKENS = 4000\nlimit = min(limit, MAX_RESULT_TOKENS)",
    "class HTTPServer:\n    def __init__(self, port): self.port = port",
    "The header of a reply is parsed by the client before the body.",
]
QUESTIONS = {
    "parse http header": 0,
    "max result tokens": 1,
    "http server": 2,
}


def table(texts: list[str]) -> ChunkTable:
    return ChunkTable.from_chunks(
        [Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t) for i, t in enumerate(texts)]
    )


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("parseHttpHeader", ["parsehttpheader", "parse", "http", "header"]),
        ("ParseHTTPHeader", ["parsehttpheader", "parse", "http", "header"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("max_result_tokens", ["max_result_tokens", "max", "result", "tokens"]),
        ("max-result-tokens", ["max-result-tokens", "max", "result", "tokens"]),
        ("MAX_RESULT_TOKENS", ["max_result_tokens", "max", "result", "tokens"]),
        ("__init__", ["__init__", "init"]),
        ("utf8Decoder", ["utf8decoder", "utf8", "decoder"]),
        ("getX", ["getx", "get"]),  # one-letter parts are dropped, like one-letter words
        ("header", ["header"]),
        ("Header", ["header"]),
        ("naïve", ["naïve"]),
        ("CO2", ["co2"]),
    ],
)
def test_identifier_parts(token: str, expected: list[str]) -> None:
    assert identifier_parts(token) == expected


def test_analyzer_words_keep_the_whole_identifier_next_to_its_parts() -> None:
    analyzer = BM25Analyzer(stem=False, stopwords=False, identifiers=True)
    assert analyzer.words("call parseHttpHeader(max-tokens) now") == [
        "call",
        "parsehttpheader",
        "parse",
        "http",
        "header",
        "max-tokens",
        "max",
        "tokens",
        "now",
    ]
    plain = BM25Analyzer(stem=False, stopwords=False)
    assert plain.words("call parseHttpHeader(max-tokens)") == [
        "call",
        "parsehttpheader",
        "max",
        "tokens",
    ]
    # stop words among the parts are dropped; the whole identifier stays
    assert BM25Analyzer(identifiers=True).terms("isValid") == ["isvalid", "valid"]


def test_words_of_a_question_find_identifiers_only_with_parts() -> None:
    with_parts = BM25Retriever.build(table(CODE), identifiers=True)
    plain = BM25Retriever.build(table(CODE), identifiers=False)
    assert with_parts.params.identifiers and not plain.params.identifiers
    for question, row in QUESTIONS.items():
        assert with_parts.search(question, k=1)[0].doc_id == f"d{row}", question
        assert f"d{row}" not in [h.doc_id for h in plain.search(question, k=1)], question
    # a query naming the identifier still matches it whole
    assert with_parts.search("parseHttpHeader", k=1)[0].doc_id == "d0"


def test_explain_shows_which_form_matched() -> None:
    retriever = BM25Retriever.build(table(CODE), identifiers=True)
    explanation = retriever.explain("parse the http header", "d0#0")
    forms = {t.term: t.form for t in explanation.terms}
    assert forms == {
        "pars": "part of parseHttpHeader",
        "http": "part of parseHttpHeader",
        "header": "part of parseHttpHeader",
    }
    assert explanation.score == retriever.search("parse the http header", k=1)[0].score
    whole = retriever.explain("parseHttpHeader line", "d0#0")
    assert {t.term: t.form for t in whole.terms} == {
        "parsehttphead": "identifier",
        "line": "word",
    }
    prose = retriever.explain("header", "d3#0")
    assert [t.form for t in prose.terms] == ["word"]
    absent = retriever.explain("server", "d0#0")
    assert [(t.form, t.contribution) for t in absent.terms] == [("", 0.0)]
    # an index without parts shows no form
    plain = BM25Retriever.build(table(CODE), identifiers=False)
    assert [t.form for t in plain.explain("parse header", "d3#0").terms] == ["", ""]


def test_an_index_built_before_searches_exactly_as_before() -> None:
    """Arrays of four params and a manifest without ``identifiers``: no parts, as built."""
    rows = table(CODE)
    old = BM25Retriever.build(rows, identifiers=False)
    arrays = dict(old.arrays())
    arrays["params"] = np.asarray(arrays["params"][:4])  # as written before identifiers
    raw_bm25 = {"k1": 1.5, "b": 0.75, "stem": True, "stopwords": True}
    params = Manifest.from_dict({"chunk": {}, "bm25": raw_bm25}).bm25
    assert params == BM25Params(identifiers=False)
    loaded = BM25Retriever.load(rows, arrays, params)
    for question in [*QUESTIONS, "parseHttpHeader", "header body"]:
        assert loaded.search(question, k=4) == old.search(question, k=4)
    with pytest.raises(IndexMismatchError, match=r"identifiers=False but .*identifiers=True"):
        BM25Retriever.load(rows, arrays, BM25Params(identifiers=True))
    new = BM25Retriever.build(rows, identifiers=True)
    assert len(new.arrays()["params"]) == 5
    with pytest.raises(IndexMismatchError, match=r"identifiers=True but .*identifiers=False"):
        BM25Retriever.load(rows, new.arrays(), params)


def test_analysis_keys_of_old_settings_are_unchanged() -> None:
    key, _ = BM25Retriever.analysis(identifiers=False)
    assert key == "bm25:stem=1:stopwords=1"
    assert BM25Retriever.analysis()[0] == "bm25:stem=1:stopwords=1"  # off by default
    assert BM25Retriever.analysis(identifiers=True)[0] == "bm25:stem=1:stopwords=1:identifiers=1"


def test_a_new_index_records_identifiers_and_an_old_one_keeps_its_analysis(tmp_path) -> None:
    docs = [
        Document(f"src/m{i}.py", t, source=f"m{i}.py", content_hash=f"h{i}", kind="code")
        for i, t in enumerate(CODE)
    ]
    cs.add_documents(docs, tmp_path / "new", bm25=BM25Params(identifiers=True))
    with cs.open_index(tmp_path / "new") as idx:
        assert idx.settings.bm25.identifiers
        assert idx.store.read_manifest()["bm25"]["identifiers"] is True
        assert idx.search("parse http header", k=1)[0].doc_id == "src/m0.py"
        (explained,) = idx.explain_top("http header", k=1)
        assert {t.form for t in explained.terms} == {"part of parseHttpHeader"}
    old = dataclasses.replace(BM25Params(), identifiers=False)
    cs.add_documents(docs, tmp_path / "old", bm25=old)
    with cs.open_index(tmp_path / "old") as idx:
        assert not idx.settings.bm25.identifiers
        assert idx.search("parse http header", k=1)[0].doc_id != "src/m0.py"

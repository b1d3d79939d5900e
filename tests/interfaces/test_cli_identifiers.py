"""`index --identifiers/--no-identifiers` sets BM25Params.identifiers, as the API keyword does."""

from __future__ import annotations

from cli_helpers import run

import ctxselect as cs


def _corpus(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "http.py").write_text(
        "def parseHttpHeader(raw):\n    return raw.split(':')\n", encoding="utf-8"
    )
    return folder


def test_no_identifiers_keeps_whole_identifiers_only(tmp_path) -> None:
    folder, ix = _corpus(tmp_path), tmp_path / "ix"
    assert run("index", str(folder), "--index", str(ix), "--no-identifiers").exit_code == 0
    with cs.open_index(ix) as idx:
        assert idx.settings.bm25.identifiers is False
        assert idx.search("header", 5, mode="bm25") == []  # the part is not a term
        assert idx.search("parsehttpheader", 5, mode="bm25")


def test_identifiers_are_off_by_default_and_kept_when_not_named(tmp_path) -> None:
    folder, ix = _corpus(tmp_path), tmp_path / "ix"
    assert run("index", str(folder), "--index", str(ix)).exit_code == 0
    with cs.open_index(ix) as idx:
        assert idx.settings.bm25.identifiers is False
        assert idx.search("header", 5, mode="bm25") == []
    assert run("index", "--index", str(ix), "--identifiers").exit_code == 0
    assert run("index", "--index", str(ix)).exit_code == 0  # not named: the index keeps it
    with cs.open_index(ix) as idx:
        assert idx.settings.bm25.identifiers is True
        assert idx.search("header", 5, mode="bm25")

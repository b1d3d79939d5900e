"""Write calls check what they are given before any folder is made: one path is one
path (not its letters), bad paths and settings leave nothing behind, and documents the
index cannot hold are refused by name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import ctxselect as cs
from ctxselect.errors import ConfigError, InputError, UnknownNameError
from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli
from ctxselect.types import Document


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n\nclock domain crossing\n")
    (root / "top.md").write_text("# Top\n\nfifo depth and gray code\n")
    return root


def _doc_ids(index: Path) -> set[str]:
    with cs.open_index(index) as idx:
        return {c.doc_id for c in idx.store.iter_chunks()}


@pytest.mark.parametrize("kind", [str, Path])
def test_a_single_path_is_one_root_not_its_characters(tree, tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tree / "docs")
    report = cs.index_paths(kind(".."), tmp_path / "ix")
    assert report.index == os.fspath(tmp_path / "ix")
    assert _doc_ids(tmp_path / "ix") == {"docs/a.md", "top.md"}
    with cs.build_index(kind("."), tmp_path / "ix2") as idx:
        assert {c.doc_id for c in idx.store.iter_chunks()} == {"a.md"}
    cs.add_paths(kind(tree / "docs" / "a.md"), tmp_path / "ix3")
    assert _doc_ids(tmp_path / "ix3") == {"a.md"}


def test_failed_index_calls_create_no_folder(tree, tmp_path):
    target = tmp_path / "i2"
    calls = [
        (InputError, "does not exist", lambda: cs.index_paths([tmp_path / "nope"], target)),
        (
            UnknownNameError,
            "chunker",
            lambda: cs.index_paths([tree], target, chunk=cs.ChunkSpec(chunker="foo")),
        ),
        (
            ConfigError,
            "must be a ctxselect.ChunkSpec",
            lambda: cs.index_paths([tree], target, chunk={"size": 3}),
        ),
        (ConfigError, "no paths to index", lambda: cs.index_paths(None, target)),
        (ConfigError, "no paths to index", lambda: cs.index_paths([], target)),
        (ConfigError, "paths must be file or folder paths", lambda: cs.index_paths([3], target)),
        (InputError, "does not exist", lambda: cs.add_paths([tmp_path / "nope"], target)),
    ]
    for error, words, call in calls:
        with pytest.raises(error, match=words):
            call()
        assert not target.exists(), words
    for args in (["/nope-ctxselect"], [str(tree), "--chunker", "foo"]):
        result = CliRunner().invoke(cli, ["index", *args, "--index", str(target)])
        assert result.exit_code != 0 and not target.exists(), result.output
    cs.index_paths([tree], target)  # and the folder is made once the call is valid
    assert _doc_ids(target) == {"docs/a.md", "top.md"}


def test_documents_the_index_cannot_hold_are_refused_by_name(tmp_path):
    target = tmp_path / "ix"
    bad = [
        ([Document("x", "hello"), Document("x", "bye")], "doc_id 'x' appears twice"),
        ([Document("ok", "fine"), Document("", "hello")], r"documents\[1\] has an empty doc_id"),
        ([Document("s", "he\ud800llo")], r"document 's' cannot be stored: its text holds"),
        ([Document("t", "x", title="\udcff")], r"document 't' .* its title holds"),
        (["not a document"], r"documents\[0\] is a str, not a ctxselect.Document"),
    ]
    for documents, words in bad:
        with pytest.raises(InputError, match=words):
            cs.add_documents(documents, target)  # type: ignore[arg-type]
        assert not target.exists()
    cs.add_documents([Document("x", "hello"), Document("y", "bye")], target)
    with pytest.raises(InputError, match="appears twice"):
        cs.add_documents([Document("y", "again"), Document("y", "twice")], target)
    assert _doc_ids(target) == {"x", "y"}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda ix: cs.index_paths(5, ix), ConfigError, "paths must be a file or folder path"),
        (lambda ix: cs.index_paths(b"w1", ix), ConfigError, r"got bytes b'w1'.*decode"),
        (lambda ix: cs.open_index(5), ConfigError, "index must be an index folder .*int 5"),
        (lambda ix: cs.index_paths([], 5), ConfigError, "index must be an index folder"),
        (
            lambda ix: cs.add_documents(Document("s", "x"), ix),
            InputError,
            r"documents must be a list of ctxselect.Document, got Document.*pass a list",
        ),
        (
            lambda ix: cs.add_documents([Document("n", None)], ix),  # type: ignore[arg-type]
            InputError,
            r"documents\[0\] \('n'\) has text=None, a NoneType",
        ),
        (
            lambda ix: cs.add_documents([Document("t", "x", title=None)], ix),  # type: ignore[arg-type]
            InputError,
            r"has title=None.*pass title='' for none",
        ),
        (
            lambda ix: cs.add_documents([Document(5, "x")], ix),  # type: ignore[arg-type]
            InputError,
            r"has doc_id=5, a int: .* pass it as a string, e.g. doc_id='5'$",  # not doc_id=''
        ),
        (
            lambda ix: cs.add_documents([Document("f", "x", fields=[("lang",)])], ix),  # type: ignore[list-item]
            InputError,
            r"fields are \(key, value\) pairs of strings or a mapping",
        ),
        (lambda ix: cs.remove_documents(None, ix), ConfigError, "doc_ids must be a document id"),
        (lambda ix: cs.remove_documents([1], ix), ConfigError, r"got list \[1\]"),
    ],
)
def test_wrong_argument_types_are_refused_by_name(tmp_path, call, error, message):
    ix = tmp_path / "ix"
    with pytest.raises(error, match=message):
        call(ix)
    assert not ix.exists()


def test_fields_given_as_a_mapping_are_stored_as_pairs(tmp_path):
    ix = tmp_path / "ix"
    cs.add_documents([Document("f.py", "def f(): pass", fields={"lang": "py"})], ix)  # type: ignore[arg-type]
    with cs.open_index(ix) as idx:
        assert "lang" in idx.info().fields
        assert [h.doc_id for h in idx.search("def", where="lang=py")] == ["f.py"]
        assert idx.search("def", where="lang=go") == []


def test_one_doc_id_given_as_a_str_is_one_id(tmp_path):
    ix = tmp_path / "ix"
    cs.add_documents([Document("a.md", "alpha"), Document("b.md", "beta")], ix)
    assert cs.remove_documents("a.md", ix).removed == 1
    with cs.open_index(ix) as idx:
        assert idx.info().documents == 1

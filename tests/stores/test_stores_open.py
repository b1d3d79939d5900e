"""open_store(uri): a path or file: URI opens the embedded store; other schemes by registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ctxselect as cs
from ctxselect.errors import ConfigError, IndexNotFoundError
from ctxselect.ingest import content_hash
from ctxselect.stores import Store, open_store, register_scheme, schemes
from ctxselect.stores import open as store_open
from ctxselect.stores.open import split_uri
from ctxselect.types import Document


@pytest.mark.parametrize("form", ["str", "path", "file-uri"])
def test_a_path_or_file_uri_opens_the_embedded_store(tmp_path: Path, form: str) -> None:
    folder = tmp_path / "my index"
    given: Any = {"str": str(folder), "path": folder, "file-uri": folder.as_uri()}[form]
    store = open_store(given, create=True)
    try:
        assert isinstance(store, Store)
        assert store.uri == str(folder) and store.generation() == 0
    finally:
        store.close()
    assert (folder / "index.sqlite").is_file()  # file: URIs are unquoted ("my%20index")
    with pytest.raises(IndexNotFoundError, match="ctxselect index"):
        open_store(tmp_path / "missing")


def test_an_unknown_scheme_names_the_supported_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        open_store("qdrant://localhost:6333/notes")
    message = str(caught.value)
    assert "'qdrant://localhost:6333/notes'" in message and "'qdrant'" in message
    assert "supported: a folder path, or file:" in message and "give an index folder" in message
    assert isinstance(caught.value, ValueError)
    assert "file:, milvus:" in message
    assert schemes() == ["file", "milvus"]


def test_the_public_api_opens_indexes_by_uri(tmp_path: Path) -> None:
    folder = tmp_path / "ix"
    doc = Document("a", "alpha words", content_hash=content_hash("", "alpha words"))
    report = cs.add_documents([doc], folder.as_uri())
    assert report.index == str(folder) and report.added == 1
    with cs.open_index(folder.as_uri()) as idx:
        assert idx.path == str(folder) and idx.search("alpha", 1)[0].doc_id == "a"
    with pytest.raises(ConfigError, match="no store handles the scheme 'qdrant'"):
        cs.open_index("qdrant://localhost/notes")


def test_a_registered_scheme_gets_the_whole_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, bool, float]] = []

    def factory(location: str, *, create: bool, wait: float) -> Any:
        calls.append((location, create, wait))
        return "a store"

    monkeypatch.setattr(store_open, "SCHEMES", dict(store_open.SCHEMES))
    register_scheme("Memo", factory)
    assert open_store("memo://box/notes", create=True, wait=2.0) == "a store"
    assert calls == [("memo://box/notes", True, 2.0)]
    assert schemes() == ["file", "memo", "milvus"]


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("ix", ("file", "ix")),
        ("C:\\index", ("file", "C:\\index")),  # a drive letter is not a scheme
        ("notes:v2", ("file", "notes:v2")),  # a colon without // is part of a name
        ("file:///tmp/a%20b", ("file", "/tmp/a b")),
        ("file://localhost/tmp/ix", ("file", "/tmp/ix")),
        ("MILVUS://h/c", ("milvus", "MILVUS://h/c")),
    ],
)
def test_split_uri(uri: str, expected: tuple[str, str]) -> None:
    assert split_uri(uri) == expected


def test_a_file_uri_of_another_machine_is_refused() -> None:
    with pytest.raises(ConfigError, match="must name this machine"):
        open_store("file://server/share/ix")

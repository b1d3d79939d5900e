"""Filters read one generation: the rows a search ranks and the metadata it filters on.

Runs against every store of ``store_kinds.STORE_KINDS``. A reader keeps the generation
it loaded until its next check for a newer one (``RELOAD_CHECK_SECONDS``); meanwhile
another process may commit new metadata. A ``where`` filter must then not judge the
old generation's chunks by the new generation's fields (which would return a draft's
text under ``status=final``): the mask, the fields it is made from and the ranking
come from one committed generation.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from store_kinds import STORE_KINDS, StoreKind

import ctxselect as cs
from ctxselect.api import generation
from ctxselect.ingest import content_hash
from ctxselect.stores import open_store
from ctxselect.types import Document

SPEC = cs.ChunkSpec(chunker="paragraph", size=8, tokenizer="chars4")
_RETAG = """
import sys
import ctxselect as cs
from ctxselect.ingest import content_hash
from ctxselect.types import Document
text = "delta final words"
doc = Document("d", text, "", "d", content_hash("", text), "text", (("status", "final"),))
cs.add_documents([doc], sys.argv[1], compact_fraction=None)
"""


def _tagged(doc_id: str, text: str, status: str) -> Document:
    return Document(doc_id, text, "", doc_id, content_hash("", text), "text", (("status", status),))


@pytest.fixture(params=STORE_KINDS, ids=lambda kind: kind.name)
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind: StoreKind = request.param
    made = kind.new_uri(tmp_path, *(request.getfixturevalue(f) for f in kind.fixtures))
    docs = [_tagged("d", "delta draft words", "draft"), _tagged("a", "alpha words", "final")]
    cs.add_documents(docs, made, chunk=SPEC, compact_fraction=None)
    return made


def _retag_in_another_process(uri: str) -> None:
    """Commit ``d`` as final from another process (no commit this process could notice)."""
    subprocess.run([sys.executable, "-c", _RETAG, uri], check=True, timeout=300)


def test_a_pinned_read_sees_the_fields_of_its_generation(uri: str) -> None:
    store = open_store(uri)
    try:
        with store.reading():
            pinned = store.generation()
            _retag_in_another_process(uri)
            assert store.generation() == pinned
            assert store.document_fields(["d"])["d"]["status"] == "draft"
        assert store.generation() == pinned + 1
        assert store.document_fields(["d"])["d"]["status"] == "final"
    finally:
        store.close()


def test_a_reader_holding_an_older_generation_never_mixes_it_with_newer_fields(
    uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reader would look for a newer generation 20 ms later: widened so the other
    # process's commit lands while the reader still holds the generation it loaded.
    monkeypatch.setattr(generation, "RELOAD_CHECK_SECONDS", 3600.0)
    with cs.open_index(uri) as idx:
        drafts = idx.search("delta", 5, where=["status=draft"])
        assert [h.text for h in drafts] == ["delta draft words"]
        loaded = idx._snapshot().generation
        _retag_in_another_process(uri)
        assert idx._snapshot().generation == loaded  # the reader still holds it
        finals = idx.search("delta", 5, where=["status=final"])
        assert [h.text for h in finals] == ["delta final words"]
        assert idx.search("delta", 5, where=["status=draft"]) == []
        assert idx._snapshot().generation == loaded + 1

"""The read module after its split: same names, same methods, each module under 400 lines."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect import api
from ctxselect.api import inspecting, read

API = Path(api.__file__).parent


@pytest.mark.parametrize(
    "module", ["read", "inspecting", "write", "write_inputs", "write_session", "watch"]
)
def test_the_module_stays_under_the_house_size(module):
    lines = (API / f"{module}.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"api/{module}.py has {lines} lines: split it along a seam"


def test_the_read_names_are_where_they_were():
    for name in read.__all__:
        assert getattr(read, name) is not None
    for name in ("DEFAULT_STOP", "Index", "check_stop", "names", "open_index", "retriever_for"):
        assert getattr(api, name) is getattr(read, name)
    assert read.whole_budget(2000) == 2000 and read.check_select_k(None) is None
    assert issubclass(read.Index, inspecting.InspectingReader)


def test_an_index_still_inspects_itself(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha beta gamma\n", encoding="utf-8")
    cs.index_paths([root], tmp_path / "ix")
    with cs.open_index(tmp_path / "ix") as idx:
        info = idx.info()
        assert (info.documents, info.modes) == (1, idx.modes()) and "bm25" in idx.modes()
        assert idx.roots == [str(root.resolve())]
        hit = idx.search("alpha", k=1)[0]
        assert idx.get_chunk(hit.chunk_id).text == hit.text
        doc = idx.get_document("a.md")
        assert idx.span_text("a.md", hit.start, hit.end) == doc.text[hit.start : hit.end]

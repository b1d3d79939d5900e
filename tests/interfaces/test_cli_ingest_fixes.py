"""CLI ingest fixes: a remembered --max-bytes, explicit files that cannot be indexed, and
escaped document ids in grep output."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import fails, run

import ctxselect as cs
from ctxselect.interfaces.cli import grep as _grep  # noqa: F401  (registers the command)
from ctxselect.stores import open_store


def _generation(folder: str) -> tuple[int, list[str]]:
    store = open_store(folder)
    try:
        return store.generation(), sorted(store.doc_hashes())
    finally:
        store.close()


def _indexed(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha text\n")
    folder = str(tmp_path / "ix")
    run("index", str(root), "--index", folder)
    return root, folder


def test_index_remembers_max_bytes_and_info_says_so(tmp_path: Path) -> None:
    root, folder = _indexed(tmp_path)
    (root / "big.txt").write_text("word " * 400)
    run("index", "--index", folder, "--max-bytes", "3000")
    report = json.loads(run("index", "--index", folder, "--json").stdout)
    assert (report["documents"], report["removed"]) == (2, 0)
    assert "setting.max_bytes = 3000 (index manifest)" in run("info", "--index", folder).stdout
    assert "--max-bytes" in fails("index", "--index", folder, "--max-bytes", "0", code=2)


def test_add_of_a_named_unsupported_file_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    root, folder = _indexed(tmp_path)
    (root / "foo.xyz").write_text("data")
    before = _generation(folder)
    error = fails("add", str(root / "foo.xyz"), "--index", folder)
    assert error.startswith(f"error: cannot add {root / 'foo.xyz'}: no loader handles .xyz")
    assert "rename it with a supported extension" in error and "nothing was added" in error
    assert _generation(folder) == before


def test_add_of_a_named_too_large_file_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    root, folder = _indexed(tmp_path)
    (root / "big.txt").write_text("word " * 400)
    before = _generation(folder)
    error = fails("add", str(root / "big.txt"), "--index", folder, "--max-bytes", "100")
    assert "too large: 2,000 bytes > --max-bytes 100; split it" in error
    assert _generation(folder) == before


def test_add_of_a_named_link_to_a_file_inside_the_roots_is_refused(tmp_path: Path) -> None:
    root, folder = _indexed(tmp_path)
    (root / "link.md").symlink_to(root / "a.md")
    before = _generation(folder)
    error = fails("add", str(root / "link.md"), "--index", folder)
    assert f"it is a symlink to {root / 'a.md'}, inside the roots" in error
    assert _generation(folder) == before
    # and a re-scan indexes the target once, counting the link as ignored
    report = json.loads(run("index", "--index", folder, "--json").stdout)
    assert report["documents"] == 1 and report["skipped"]["ignored"] == 1


def test_add_of_an_empty_named_file_is_no_error(tmp_path: Path) -> None:
    root, folder = _indexed(tmp_path)
    (root / "empty.md").write_text("")
    report = json.loads(run("add", str(root / "empty.md"), "--index", folder, "--json").stdout)
    assert report["skipped"]["empty"] == 1


def test_grep_escapes_a_newline_in_a_document_id(tmp_path: Path) -> None:
    folder = str(tmp_path / "ix")
    cs.add_documents([cs.Document(doc_id="two\nlines.md", text="needle here\n")], folder)
    out = run("grep", "needle", "--index", folder).stdout
    assert out == "two\\nlines.md\ntwo\\nlines.md:1: needle here\n"


def test_mcp_instructions_count_one_document_in_the_singular(tmp_path: Path) -> None:
    from ctxselect import api
    from ctxselect.interfaces.mcp_server import build_server

    folder = str(tmp_path / "ix")
    cs.add_documents([cs.Document(doc_id="a.md", text="alpha")], folder)
    instructions = build_server(api.open_index(folder)).instructions or ""
    assert "(1 document, 1 chunk; tokens counted in" in instructions

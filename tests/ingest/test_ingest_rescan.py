"""left_out: the rule a walk of the roots would leave a file out by, as ``add`` checks it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxselect.ingest import load_paths
from ctxselect.ingest.rescan import left_out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "sub" / "build").mkdir(parents=True)
    (tmp_path / ".hid").mkdir()
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "ds" / "qrels").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("# output\n\n*.log\nbuild/\n", encoding="utf-8")
    (tmp_path / "sub" / ".gitignore").write_text("!keep.log\n", encoding="utf-8")
    for name in ["a.log", "sub/keep.log", "sub/x.log", "sub/build/y.md", ".hid/z.md", ".env",
                 "node_modules/q.md", "ok.md", "ds/corpus.jsonl", "ds/notes.md"]:  # fmt: skip
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    return tmp_path


def test_each_rule_is_named_with_how_to_include_the_file(root: Path) -> None:
    def why(name: str) -> str:
        return left_out(str(root / name), [str(root)])

    ignore = root / ".gitignore"
    assert why("a.log") == (
        f"the pattern '*.log' in {ignore} line 3 ignores it; remove that pattern, or "
        f"re-include the file with a '!' pattern after it"
    )
    assert why("sub/x.log").startswith(f"the pattern '*.log' in {ignore} line 3")
    assert why("sub/build/y.md").startswith(
        f"the pattern 'build/' in {ignore} line 4 ignores the folder {root / 'sub' / 'build'}; "
        f"remove that pattern (a file inside an ignored folder cannot be re-included)"
    )
    assert why(".hid/z.md").startswith("the name '.hid' is hidden (it starts with a dot); rename")
    assert why(".env").startswith("the name '.env' is hidden")
    assert why("node_modules/q.md").startswith(f"{root / 'node_modules'} is a junk folder")
    assert why("ds/notes.md").startswith(f"{root / 'ds'} is a BEIR dataset folder")
    for kept in ["sub/keep.log", "ok.md", "ds/corpus.jsonl"]:
        assert why(kept) == ""
    assert left_out(str(root / "ok.md"), [str(root / "sub")]) == ""  # under no root


def test_it_agrees_with_what_the_walk_loads(root: Path) -> None:
    (root / "ds" / "corpus.jsonl").write_text('{"_id": "c1", "text": "corpus"}\n', "utf-8")
    walked = {d.source for d in load_paths(root).documents}
    cache: dict = {}
    files = [p for p in root.rglob("*") if p.is_file() and p.name != ".gitignore"]
    kept = {str(p) for p in files if not left_out(str(p), [str(root)], cache)}
    assert {s.rsplit(":", 1)[0] for s in walked} == kept  # sub/keep.log loads as text
    assert str(root / "sub" / "keep.log") in kept and len(cache) == 3  # root, sub, ds: once


def test_a_ctxselectignore_pattern_is_named_with_its_file_and_line(root: Path) -> None:
    (root / "sub" / ".ctxselectignore").write_text("# index only\nkeep.log\n", "utf-8")
    assert left_out(str(root / "sub" / "keep.log"), [str(root)]).startswith(
        f"the pattern 'keep.log' in {root / 'sub' / '.ctxselectignore'} line 2 ignores it"
    )
    walked = {d.doc_id for d in load_paths(root).documents}
    assert "sub/keep.log" not in walked  # the walk agrees

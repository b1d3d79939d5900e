"""Ignore rules and skipped files: hidden, .gitignore, junk, binary, empty, large, unreadable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ctxselect.ingest.files as ingest_files
import ctxselect.ingest.walk as ingest_walk
from ctxselect.ingest import load_paths
from ctxselect.ingest.rescan import left_out


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create ``files`` (relative path -> content) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def ids(root: Path | list[Path], **kwargs: int) -> list[str]:
    return [d.doc_id for d in load_paths(root, **kwargs).documents]


def test_hidden_files_and_folders_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, {".env": "SECRET=1", ".git/config": "x", ".cache/a.txt": "a", "ok.txt": "ok"})
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["ok.txt"]
    assert result.report.ignored == 3  # .env, .git/, .cache/ (each counted once)


def test_hidden_root_given_explicitly_is_loaded(tmp_path: Path) -> None:
    write(tmp_path, {".notes/a.txt": "a", ".hidden.txt": "h"})
    assert ids(tmp_path / ".notes") == ["a.txt"]
    assert ids(tmp_path / ".hidden.txt") == [".hidden.txt"]


def test_junk_folders_are_ignored(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "__pycache__/m.py": "x",
            "node_modules/pkg/index.js": "x",
            "pkg.egg-info/PKG-INFO": "x",
            "venv/pyvenv.cfg": "home = /usr",
            "venv/lib/site.py": "x",
            "src/m.py": "x",
        },
    )
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["src/m.py"]
    assert result.report.ignored == 4


def test_root_gitignore_with_negation_and_dir_patterns(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n/only_top.txt\n",
            "a.log": "x",
            "keep.log": "x",
            "build/out.txt": "x",
            "only_top.txt": "x",
            "sub/only_top.txt": "x",
            "sub/b.log": "x",
            "sub/build/out.txt": "x",
            "notes.txt": "x",
        },
    )
    # .log files load as text: only the one the negation re-includes is loaded
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["keep.log", "notes.txt", "sub/only_top.txt"]
    report = result.report
    # ignored: .gitignore, a.log, build/, only_top.txt, sub/b.log, sub/build/
    assert report.ignored == 6
    assert report.unsupported == 0


def test_nested_gitignore_is_relative_to_its_folder_and_overrides_parent(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.tmp.txt\nsecret.md\n",
            "x.tmp.txt": "x",
            "secret.md": "s",
            "docs/.gitignore": "!secret.md\n/draft.md\n",
            "docs/secret.md": "s",
            "docs/draft.md": "d",
            "docs/y.tmp.txt": "y",
            "docs/inner/draft.md": "kept: the pattern is anchored to docs/",
            "other/draft.md": "kept: docs/.gitignore does not apply here",
            "other/secret.md": "s",
        },
    )
    assert ids(tmp_path) == ["docs/inner/draft.md", "docs/secret.md", "other/draft.md"]


def test_ctxselectignore_leaves_out_what_git_tracks_and_takes_back_what_git_ignores(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.log\nnotes.md\n",
            ".ctxselectignore": "CHANGELOG.md\nfixtures/\n!keep.log\n",
            "CHANGELOG.md": "left out of the index, not of git",
            "fixtures/big.txt": "left out with its folder",
            "keep.log": "taken back: in one folder .ctxselectignore wins",
            "other.log": "still ignored by .gitignore",
            "notes.md": "still ignored by .gitignore",
            "src/a.py": "kept",
            "src/.ctxselectignore": "!notes.md\n",
            "src/notes.md": "taken back by a deeper file",
        },
    )
    assert ids(tmp_path) == ["keep.log", "src/a.py", "src/notes.md"]
    assert load_paths(tmp_path).report.ignored == 7  # 3 ignore files (hidden), 4 by pattern


def test_file_inside_ignored_folder_cannot_be_reincluded(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "out/\n!out/keep.txt\n", "out/keep.txt": "k", "a.txt": "a"})
    assert ids(tmp_path) == ["a.txt"]


def test_binary_files_are_skipped_and_counted(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "nul.txt": b"text then a NUL\x00 byte",
            "noise.txt": bytes(range(1, 9)) * 200,
            "fine.txt": "fine",
        },
    )
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["fine.txt"]
    assert result.report.binary == 2


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    write(tmp_path, {"latin1.txt": "café crème".encode("latin-1"), "ok.txt": "ok"})
    result = load_paths(tmp_path)
    doc = next(d for d in result.documents if d.doc_id == "latin1.txt")
    assert doc.text == "caf\ufffd cr\ufffdme"
    assert result.report.decoded_with_replacement == 1
    assert result.report.replaced_files == (str(tmp_path / "latin1.txt"),)
    assert result.report.loaded == 2


def test_empty_and_whitespace_only_files_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"empty.txt": "", "blank.md": " \n\t\r\n", "a.txt": "a"})
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["a.txt"]
    assert result.report.empty == 2


def test_files_above_max_bytes_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"big.txt": "x" * 101, "edge.txt": "y" * 100})
    result = load_paths(tmp_path, max_bytes=100)
    assert [d.doc_id for d in result.documents] == ["edge.txt"]
    assert result.report.too_large == 1


def test_unreadable_files_are_reported_once_and_the_rest_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"locked.txt": "x", "gone.txt": "x", "ok.txt": "ok"})
    real_read = ingest_files.read_bytes

    def failing_read(path: str) -> bytes:
        if path.endswith("locked.txt"):
            raise PermissionError(13, "Permission denied", path)
        if path.endswith("gone.txt"):
            raise FileNotFoundError(2, "No such file or directory", path)
        return real_read(path)

    monkeypatch.setattr(ingest_files, "read_bytes", failing_read)
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["ok.txt"]
    assert result.report.unreadable == (
        (str(tmp_path / "gone.txt"), "vanished during the scan"),
        (str(tmp_path / "locked.txt"), "permission denied"),
    )
    summary = result.report.summary()
    assert "Could not read 2" in summary and "locked.txt (permission denied)" in summary


def test_unlistable_folder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"private/a.txt": "a", "public/b.txt": "b"})
    real_list = ingest_walk.list_dir

    def failing_list(path: str) -> list[os.DirEntry[str]]:
        if path.endswith("private"):
            raise PermissionError(13, "Permission denied", path)
        return real_list(path)

    monkeypatch.setattr(ingest_walk, "list_dir", failing_list)
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["public/b.txt"]
    assert result.report.unreadable == ((str(tmp_path / "private"), "permission denied"),)


def test_broken_symlink_and_fifo_are_unreadable_not_fatal(tmp_path: Path) -> None:
    write(tmp_path, {"ok.txt": "ok"})
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    os.mkfifo(tmp_path / "pipe.txt")  # opening a FIFO would block: it must not be read
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["ok.txt"]
    assert dict(result.report.unreadable) == {
        str(tmp_path / "dangling.txt"): "broken symlink",
        str(tmp_path / "pipe.txt"): "not a regular file",
    }


def test_symlink_loops_terminate_and_linked_files_load_once(tmp_path: Path) -> None:
    write(tmp_path, {"a/file.txt": "f", "target.txt": "t"})
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "a" / "self").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "link.txt").symlink_to(tmp_path / "target.txt")
    (tmp_path / "x").symlink_to(tmp_path / "y")
    (tmp_path / "y").symlink_to(tmp_path / "x")
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["a/file.txt", "target.txt"]
    # the two folder links back into visited folders, and link.txt: its target loads once
    assert result.report.ignored == 3
    assert dict(result.report.unreadable) == {
        str(tmp_path / "x"): "symlink loop",
        str(tmp_path / "y"): "symlink loop",
    }


def test_summary_mentions_every_nonzero_count(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"a.txt": "a", "b.bin": b"\x00", "c.txt": "", ".h": "h", "d.txt": b"\xff ok"},
    )
    summary = load_paths(tmp_path).report.summary()
    assert summary.startswith("Loaded 2 documents.")
    for part in ("1 empty", "1 unsupported type", "1 ignored", "invalid UTF-8"):
        assert part in summary


def test_the_ignore_files_of_the_enclosing_git_work_tree_apply_above_the_root(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)  # the top of a work tree
    (tmp_path / ".git" / "info" / "exclude").write_text("*.local.md\n", encoding="utf-8")
    write(
        tmp_path,
        {
            ".gitignore": "*.secret.md\n/docs/drafts/\n",
            "docs/.gitignore": "!keep.secret.md\n",
            "docs/a.md": "kept",
            "docs/prod.secret.md": "token=abc: ignored by the top .gitignore",
            "docs/keep.secret.md": "taken back by docs/.gitignore, deeper",
            "docs/me.local.md": "ignored by .git/info/exclude",
            "docs/drafts/wip.md": "ignored: the anchored pattern reaches below the root",
            "docs/sub/drafts/x.md": "kept: /docs/drafts/ is anchored at the top",
        },
    )
    docs = tmp_path / "docs"
    assert ids(docs) == ["a.md", "keep.secret.md", "sub/drafts/x.md"]
    assert left_out(str(docs / "prod.secret.md"), [str(docs)]).startswith(
        f"the pattern '*.secret.md' in {tmp_path / '.gitignore'} line 1 ignores it"
    )
    assert left_out(str(docs / "me.local.md"), [str(docs)]).startswith(
        f"the pattern '*.local.md' in {tmp_path / '.git' / 'info' / 'exclude'} line 1"
    )
    assert ids(tmp_path) == ["docs/a.md", "docs/keep.secret.md", "docs/sub/drafts/x.md"]


def test_ignore_files_above_a_root_outside_any_work_tree_are_not_read(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "*.md\n", "docs/a.md": "kept: no .git above"})
    assert ids(tmp_path / "docs") == ["a.md"]


def test_a_named_root_inside_a_folder_git_ignores_is_still_indexed(tmp_path: Path) -> None:
    # datasets are often git-ignored; `ctxselect index data/set` must not come out empty
    (tmp_path / ".git").mkdir()
    write(
        tmp_path,
        {
            ".gitignore": "data/\n*.secret.md\n",
            "data/set/a.md": "kept: the user named data/set",
            "data/set/b.secret.md": "ignored: the pattern is about files below the root",
        },
    )
    assert ids(tmp_path / "data" / "set") == ["a.md"]
    assert ids(tmp_path) == []  # walked from the top, data/ is ignored as git ignores it


def test_a_pattern_git_cannot_read_matches_nothing_and_the_rest_still_apply(
    tmp_path: Path,
) -> None:
    # "[z-a]" made pathspec raise re.error out of the walk: a traceback, nothing indexed
    write(tmp_path, {".gitignore": "[z-a]\n\\\n*.log\n", "a.md": "kept", "b.log": "ignored"})
    assert ids(tmp_path) == ["a.md"]

"""Symlinks and file names at the ingest stage: nothing read from outside the roots unless
asked, no folder loaded twice through a link, names that are not UTF-8 skipped and named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxselect.errors import InputError
from ctxselect.ingest import load_paths


def write(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """``root`` with links out of it (a file, a folder) and a file link that stays inside."""
    write(tmp_path, {"root/a.txt": "alpha", "outside/secret.txt": "secret", "outside/s2.txt": "s2"})
    root = tmp_path / "root"
    (root / "secret.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (root / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "alias.txt").symlink_to(root / "a.txt")
    return root


def test_links_leading_out_of_the_roots_are_not_read_but_named(linked: Path) -> None:
    result = load_paths(linked)
    assert [d.doc_id for d in result.documents] == ["a.txt"]  # alias.txt: a.txt, read once
    assert result.report.ignored == 1
    outside = linked.parent / "outside"
    assert result.report.outside_links == (
        (str(linked / "out"), str(outside)),
        (str(linked / "secret.txt"), str(outside / "secret.txt")),
    )
    summary = result.report.summary()
    assert "Not followed: 2 symlink(s)" in summary and str(linked / "secret.txt") in summary


def test_follow_symlinks_reads_them(linked: Path) -> None:
    result = load_paths(linked, follow_symlinks=True)
    ids = [d.doc_id for d in result.documents]
    assert ids == ["a.txt", "out/s2.txt", "out/secret.txt", "secret.txt"]
    assert result.report.outside_links == ()


def test_a_root_that_is_a_link_out_of_within_is_not_read(linked: Path) -> None:
    result = load_paths([linked / "secret.txt"], within=[linked])
    assert result.documents == ()
    assert result.report.outside_links[0][0] == str(linked / "secret.txt")
    inside = load_paths([linked / "alias.txt"], within=[linked])
    assert [d.text for d in inside.documents] == ["alpha"]


def test_a_folder_link_back_into_the_roots_loads_nothing_twice(tmp_path: Path) -> None:
    write(tmp_path, {"root/sub/x.txt": "x", "root/zz_first.txt": "z"})
    root = tmp_path / "root"
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    (root / "a_alias").symlink_to(root / "sub", target_is_directory=True)  # walked before sub
    expected = ["sub/x.txt", "zz_first.txt"]  # each file once, under its real place
    assert [d.doc_id for d in load_paths(root).documents] == expected
    for roots in ([root, root / "a_alias"], [root / "a_alias", root]):
        assert [d.doc_id for d in load_paths(roots).documents] == expected


def test_a_folder_link_into_a_hidden_folder_is_still_walked(tmp_path: Path) -> None:
    write(tmp_path, {"root/.hidden/notes/n.txt": "n"})
    root = tmp_path / "root"
    (root / "notes").symlink_to(root / ".hidden" / "notes", target_is_directory=True)
    assert [d.doc_id for d in load_paths(root).documents] == ["notes/n.txt"]


def test_names_that_are_not_utf8_are_skipped_and_named(tmp_path: Path) -> None:
    write(tmp_path, {"root/ok.txt": "ok"})
    root = os.fsencode(tmp_path / "root")
    with open(os.path.join(root, b"bad\xff.md"), "wb") as handle:
        handle.write(b"x\n")
    os.mkdir(os.path.join(root, b"dir\xfe"))
    with open(os.path.join(root, b"dir\xfe", b"in.txt"), "wb") as handle:
        handle.write(b"inside\n")
    result = load_paths(tmp_path / "root")
    assert [d.doc_id for d in result.documents] == ["ok.txt"]
    base = str(tmp_path / "root")
    assert result.report.unreadable == (
        (f"{base}/bad\\xff.md", "name is not valid UTF-8"),
        (f"{base}/dir\\xfe", "name is not valid UTF-8"),
    )
    result.report.summary().encode("utf-8")  # printable: no lone surrogates left


def test_a_root_that_is_not_utf8_is_an_input_error(tmp_path: Path) -> None:
    bad = os.path.join(os.fsencode(tmp_path), b"r\xff")
    os.mkdir(bad)
    with pytest.raises(InputError, match=r"r\\xff.* is not valid UTF-8"):
        load_paths(os.fsdecode(bad))


def test_unsupported_files_are_named(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "a", "b.odt": "b", "c.docx": "c"})  # (.pdf has a loader now)
    report = load_paths(tmp_path).report
    assert report.unsupported == 2
    assert report.unsupported_paths == (str(tmp_path / "b.odt"), str(tmp_path / "c.docx"))
    assert f"Unsupported: {tmp_path / 'b.odt'}, {tmp_path / 'c.docx'}." in report.summary()

"""Index and add safely: nothing read from outside the roots, nothing indexed twice, odd
names and unreadable files never fatal (or one clear line when named), truthful reports."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

import ctxselect as cs
from ctxselect.api import watch
from ctxselect.errors import InputError
from ctxselect.ingest import files as ingest_files
from ctxselect.interfaces.cli.main import cli


def run(*args: str, code: int = 0):
    from ctxselect.interfaces.cli import commands, experiments, store  # noqa: F401

    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (result.output, result.exception)
    return result


@pytest.fixture
def tree(tmp_path):
    """``docs`` (three notes) beside ``outside`` (a secret), linked into ``docs``."""
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha apples in the orchard\n", encoding="utf-8")
    (root / "b.md").write_text("# B\n\nbeta bananas on the boat\n", encoding="utf-8")
    (root / "sub" / "c.md").write_text("# C\n\ngamma cherries in the cart\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("password hunter2\n", encoding="utf-8")
    return root


def _ids(ix) -> list[str]:
    with cs.open_index(ix) as idx:
        return sorted(idx.store.doc_hashes())


def test_index_skips_and_names_links_out_of_the_roots(tmp_path, tree):
    outside = tmp_path / "outside"
    (tree / "secret.md").symlink_to(outside / "secret.md")
    (tree / "out").symlink_to(outside, target_is_directory=True)
    (tree / "alias.md").symlink_to(tree / "a.md")  # stays inside: a.md, indexed once
    ix = tmp_path / "ix"
    report = cs.index_paths([tree], ix)
    assert _ids(ix) == ["a.md", "b.md", "sub/c.md"]
    links = [str(tree / "out"), str(tree / "secret.md")]
    assert [link for link, _ in report.outside_links] == links
    assert report.skipped["outside_roots"] == 2
    with cs.open_index(ix) as idx:
        assert idx.search("hunter2") == []

    text = run("index", str(tree), "--index", str(tmp_path / "ix2")).output
    assert "not followed: 2 symlink(s) leading outside the roots" in text
    assert f"{tree / 'secret.md'} -> {outside / 'secret.md'}" in text
    data = json.loads(run("index", str(tree), "--index", str(ix), "--json").output)
    assert data["outside_links"] == [
        [links[0], str(outside)],
        [links[1], str(outside / "secret.md")],
    ]

    run("index", str(tree), "--index", str(ix), "--follow-symlinks")
    assert _ids(ix) == ["a.md", "b.md", "out/secret.md", "secret.md", "sub/c.md"]
    assert cs.index_paths([], ix).removed == 2  # a run without the flag drops them again
    assert _ids(ix) == ["a.md", "b.md", "sub/c.md"]
    followed = cs.index_paths([tree], tmp_path / "ix3", follow_symlinks=True)
    assert followed.added == 5 and followed.outside_links == ()


def test_add_of_a_folder_link_back_into_the_root_adds_no_duplicates(tmp_path, tree):
    ix = str(tmp_path / "ix")
    run("index", str(tree), "--index", ix)
    (tree / "bad").mkdir()
    (tree / "bad" / "dirloop").symlink_to("..", target_is_directory=True)
    report = cs.add_paths([tree / "bad" / "dirloop"], ix)
    assert (report.added, report.documents) == (0, 3)
    out = run("add", str(tree / "bad" / "dirloop"), "--index", ix, "--json").output
    assert json.loads(out)["documents"] == 3
    assert _ids(ix) == ["a.md", "b.md", "sub/c.md"]
    # a link to a folder inside the root keeps the ids of the real folder
    (tree / "alias").symlink_to(tree / "sub", target_is_directory=True)
    (tree / "sub" / "d.md").write_text("delta dates\n", encoding="utf-8")
    assert cs.add_paths([tree / "alias"], ix).added == 1
    assert _ids(ix) == ["a.md", "b.md", "sub/c.md", "sub/d.md"]
    assert cs.index_paths([], ix).added == 0  # a re-scan agrees with the ids add gave


def test_add_refuses_a_named_link_out_of_the_roots_unless_followed(tmp_path, tree):
    ix = str(tmp_path / "ix")
    run("index", str(tree), "--index", ix)
    (tree / "secret.md").symlink_to(tmp_path / "outside" / "secret.md")
    (tree / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(InputError, match=r"symlink to .*outside the roots"):
        cs.add_paths([tree / "secret.md"], ix)
    err = run("add", str(tree / "out"), "--index", ix, code=1).stderr
    assert err.startswith(f"error: cannot add {tree / 'out'}: it is a symlink to ")
    assert err.count("\n") == 1 and "--follow-symlinks" in err
    assert _ids(ix) == ["a.md", "b.md", "sub/c.md"]
    run("add", str(tree / "secret.md"), "--index", ix, "--follow-symlinks")
    assert "secret.md" in _ids(ix)


def test_add_of_an_unreadable_named_file_exits_1_naming_it(tmp_path, tree, monkeypatch):
    ix = str(tmp_path / "ix")
    run("index", str(tree), "--index", ix)
    (tree / "new.md").write_text("new notes\n", encoding="utf-8")
    real = ingest_files.read_bytes

    def read_bytes(path: str) -> bytes:
        if os.path.basename(path) == "new.md":
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(ingest_files, "read_bytes", read_bytes)
    err = run("add", str(tree / "new.md"), str(tree / "b.md"), "--index", ix, code=1).stderr
    assert err == f"error: cannot add {tree / 'new.md'}: permission denied; nothing was added\n"
    assert _ids(ix) == ["a.md", "b.md", "sub/c.md"]
    report = cs.add_paths([tree], ix)  # inside a folder it is reported, not fatal
    assert report.unreadable == ((str(tree / "new.md"), "permission denied"),)


def _bad_name(folder) -> None:
    with open(os.path.join(os.fsencode(folder), b"bad\xff.md"), "wb") as handle:
        handle.write(b"x\n")


def test_a_file_name_that_is_not_utf8_is_skipped_and_named_never_fatal(tmp_path, tree):
    _bad_name(tree)
    ix = tmp_path / "ix"
    report = cs.index_paths([tree], ix)
    assert report.added == 3 and report.unreadable == (
        (f"{tree}/bad\\xff.md", "name is not valid UTF-8"),
    )
    assert cs.verify_index(ix).ok
    text = run("index", str(tree), "--index", str(tmp_path / "ix2")).output
    assert f"{tree}/bad\\xff.md: name is not valid UTF-8" in text
    data = json.loads(run("index", str(tree), "--index", str(ix), "--json").output)
    assert data["unreadable"] == [[f"{tree}/bad\\xff.md", "name is not valid UTF-8"]]
    run("add", str(tree), "--index", str(ix))
    reports: list = []
    assert watch.watch_paths([tree], tmp_path / "ix3", on_report=reports.append, max_runs=1)
    assert reports[0].added == 3


def test_a_title_only_beir_record_is_indexed_and_found(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {"_id": "t1", "title": "Zebra migration patterns", "text": ""},
        {"_id": "d1", "title": "Other", "text": "apples and pears"},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([corpus], ix)
    with cs.open_index(ix) as idx:
        hits = idx.search("zebra migration")
        assert [h.doc_id for h in hits] == ["t1"]
        doc = idx.store.get_document("t1")
        (chunk,) = idx.store.chunks_of(["t1"])
        assert doc.text[chunk.start : chunk.end] == chunk.text == "Zebra migration patterns"


def test_adding_an_embedder_says_what_happened(tmp_path, tree):
    ix = str(tmp_path / "ix")
    run("index", str(tree), "--index", ix)
    report = cs.index_paths([], ix, embedder="hash")
    assert (report.added, report.updated, report.unchanged) == (0, 0, 3)
    assert report.note.startswith("embedder hash added: every chunk was embedded")
    assert "reused" not in report.note
    dropped = run("index", "--index", ix, "--embedder", "none").output
    assert "(0 added, 0 updated, 0 removed, 3 unchanged)" in dropped
    assert "embedder removed: dense vectors dropped" in dropped


def test_a_pending_compaction_is_done_by_the_next_write_even_without_changes(tmp_path, tree):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    for name in ("a.md", "b.md"):
        (tree / name).write_text(f"# {name}\n\nchanged text\n", encoding="utf-8")
    # as if killed between the update's commit and its compaction
    pending = cs.index_paths([], ix, compact_fraction=None)
    assert pending.updated == 2 and not pending.compacted and pending.delta_segments == 1
    again = cs.index_paths([], ix)
    assert not again.rebuilt and again.compacted and again.delta_segments == 0
    (tree / "b.md").write_text("# b\n\nchanged again\n", encoding="utf-8")
    cs.index_paths([], ix, compact_fraction=None)
    text = run("add", str(tree / "a.md"), "--index", str(ix)).output
    assert "nothing changed: compacted the changes an earlier write left pending" in text
    assert "status: up to date (compacted)" in text and "generation" not in text


def test_unsupported_files_are_named(tmp_path, tree):
    names = [f"f{i}.odt" for i in range(7)]  # (.pdf has a loader now)
    for name in names:
        (tree / name).write_bytes(b"PK\x03\x04")
    ix = str(tmp_path / "ix")
    text = run("index", str(tree), "--index", ix).output
    shown = ", ".join(str(tree / n) for n in names[:5])
    assert f"unsupported (no loader for the file type): {shown} and 2 more" in text
    data = json.loads(run("index", str(tree), "--index", ix, "--json").output)
    assert data["unsupported_files"] == [str(tree / n) for n in names]


def test_mcp_write_tools_index_past_a_name_that_is_not_utf8(tmp_path, tree):
    from ctxselect.agent import Sessions

    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    _bad_name(tree)
    (tree / "d.md").write_text("delta dates\n", encoding="utf-8")
    service = Sessions.open(ix)
    try:
        result = service.add_paths(["d.md"])
        assert result.documents == 4 and "d.md" in result.doc_ids
        assert result.report.unreadable[0][0] == f"{tree}/bad\\xff.md"
    finally:
        service.close()


def test_a_compaction_that_fails_after_the_commit_keeps_the_update_and_says_so(
    tmp_path, monkeypatch
):
    """A full disk during the compaction that follows a commit: the run reports the
    committed update with a note (exit 0), not "the index keeps its last state"."""
    from ctxselect.api import sync
    from ctxselect.errors import IndexWriteError

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nclock domain crossing\n", encoding="utf-8")
    index = tmp_path / "ix"
    cs.index_paths([docs], index)
    (docs / "b.md").write_text("# B\n\nmetastability window\n", encoding="utf-8")

    def full_disk(*_args, **_kwargs):
        raise IndexWriteError("could not write index: No space left on device")

    monkeypatch.setattr(sync, "_maintain", full_disk)
    result = run("index", str(docs), "--index", str(index))
    assert "the update was committed, but compacting it afterwards failed" in result.output
    assert "ctxselect compact" in result.output
    with cs.open_index(index) as idx:
        assert idx.info().documents == 2
        assert [h.doc_id for h in idx.search("metastability", 1)] == ["b.md"]


def test_a_recorded_root_that_is_gone_is_named_and_nothing_changes(tmp_path):
    """A re-scan whose recorded root disappeared says so (the user never typed the path),
    and how to keep the other roots; the index keeps its documents."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nclock domain crossing\n", encoding="utf-8")
    index = tmp_path / "ix"
    cs.index_paths([docs], index)
    docs.rename(tmp_path / "moved")
    result = run("index", "--index", str(index), code=1)
    assert "which no longer exists, so nothing was changed" in result.output
    assert "name the roots to keep" in result.output
    with cs.open_index(index) as idx:
        assert idx.info().documents == 1

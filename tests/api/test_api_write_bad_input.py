"""Bad input during indexing: a clear message, the last committed state kept, the scan goes on."""

from __future__ import annotations

import errno
import os
import sqlite3

import pytest
from click.testing import CliRunner

import ctxselect as cs
from ctxselect.errors import IndexWriteError
from ctxselect.ingest import files as ingest_files
from ctxselect.interfaces.cli.main import cli, main  # noqa: F401  (main registers commands)
from ctxselect.stores.embedded import files as store_files
from ctxselect.stores.embedded.sqlite import FILE_NAME, SQLiteStore


def run(*args: str):
    from ctxselect.interfaces.cli import commands, experiments, store  # noqa: F401

    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in {
        "a.txt": "alpha apples in the orchard",
        "b.txt": "beta bananas on the boat",
        "c.txt": "gamma cherries in the cart",
    }.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _ids(ix) -> set[str]:
    with cs.open_index(ix) as idx:
        return set(idx.store.doc_hashes())


def _failing_read(monkeypatch, name: str, exc: OSError) -> None:
    real = ingest_files.read_bytes

    def read_bytes(path: str) -> bytes:
        if os.path.basename(path) == name:
            raise exc
        return real(path)

    monkeypatch.setattr(ingest_files, "read_bytes", read_bytes)


def test_a_file_that_vanishes_during_the_scan_is_reported_and_removed(tmp_path, tree, monkeypatch):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    (tree / "d.txt").write_text("delta dates", encoding="utf-8")
    _failing_read(monkeypatch, "b.txt", FileNotFoundError(errno.ENOENT, "gone", "b.txt"))
    report = cs.index_paths([], ix)
    assert report.added == 1 and report.removed == 1
    assert ("b.txt" in report.unreadable[0][0]) and report.unreadable[0][
        1
    ] == "vanished during the scan"
    assert _ids(ix) == {"a.txt", "c.txt", "d.txt"}


def test_an_unreadable_file_keeps_its_last_indexed_version(tmp_path, tree, monkeypatch):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    (tree / "c.txt").write_text("gamma cherries and grapes", encoding="utf-8")
    _failing_read(monkeypatch, "a.txt", PermissionError(errno.EACCES, "denied", "a.txt"))
    report = cs.index_paths([], ix)
    assert report.updated == 1 and report.removed == 0
    assert report.unchanged == 2  # b.txt, and a.txt kept as indexed: the counts add up
    assert report.added + report.updated + report.unchanged == report.documents == 3
    assert report.unreadable[0][1] == "permission denied"
    with cs.open_index(ix) as idx:
        assert idx.search("apples")[0].doc_id == "a.txt"  # kept, not deleted
        assert idx.search("grapes")[0].doc_id == "c.txt"
    result = run("index", "--index", str(ix))  # the summary names the file and why
    assert result.exit_code == 0 and "permission denied" in result.output


def test_a_file_changed_while_it_is_read_is_indexed_as_read_then_updated(
    tmp_path, tree, monkeypatch
):
    ix = tmp_path / "ix"
    real = ingest_files.read_bytes

    def read_then_change(path: str) -> bytes:
        data = real(path)
        if path.endswith("a.txt"):
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("alpha apricots now")
        return data

    monkeypatch.setattr(ingest_files, "read_bytes", read_then_change)
    cs.index_paths([tree], ix)
    monkeypatch.setattr(ingest_files, "read_bytes", real)
    with cs.open_index(ix) as idx:
        assert idx.search("apples")[0].doc_id == "a.txt" and idx.search("apricots") == []
    assert cs.index_paths([], ix).updated == 1
    with cs.open_index(ix) as idx:
        assert idx.search("apricots")[0].doc_id == "a.txt"


def test_symlink_loops_and_large_files_are_skipped_with_reasons(tmp_path, tree):
    (tree / "sub").mkdir()
    (tree / "sub" / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "self").symlink_to(tree / "self")  # a link to itself: ELOOP
    (tree / "big.txt").write_text("word " * 2000, encoding="utf-8")
    report = cs.index_paths([tree], tmp_path / "ix", max_bytes=5000)
    assert report.added == 3 and report.skipped["too_large"] == 1
    assert report.skipped["ignored"] >= 1  # the looping folder link, entered once
    assert any(why == "symlink loop" for _, why in report.unreadable)
    assert cs.verify_index(tmp_path / "ix").ok


def test_a_full_disk_during_commit_keeps_the_last_committed_state(tmp_path, tree, monkeypatch):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    (tree / "a.txt").write_text("alpha avocados", encoding="utf-8")

    def full(*_args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SQLiteStore, "_insert_delta", full)
    with pytest.raises(IndexWriteError, match="disk is full"):
        cs.index_paths([], ix, compact_fraction=None)
    result = run("index", "--index", str(ix))
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "disk is full" in result.output and "last committed state" in result.output
    monkeypatch.undo()
    with cs.open_index(ix) as idx:
        assert idx.search("apples")[0].doc_id == "a.txt" and idx.search("avocados") == []
    assert cs.verify_index(ix).ok
    assert cs.index_paths([], ix).updated == 1  # free space, run again: it goes through


def test_a_full_disk_while_writing_a_base_keeps_the_last_committed_state(
    tmp_path, tree, monkeypatch
):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)

    def no_space(handle: object, array: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_files, "write_array", no_space)
    with pytest.raises(IndexWriteError, match="disk is full"):
        cs.index_paths([tree], ix, chunk=cs.ChunkSpec(chunker="tokens", size=64))
    monkeypatch.undo()
    with cs.open_index(ix) as idx:
        assert idx.chunk_spec == cs.ChunkSpec() and idx.search("apples")
    report = cs.verify_index(ix)
    assert report.ok and report.removed == ()


def test_a_damaged_index_gives_one_line_errors_not_tracebacks(tmp_path, tree):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    db = ix / FILE_NAME
    data = bytearray(db.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # a page in the middle, past the header
    db.write_bytes(bytes(data))
    for args in (("search", "apples"), ("info",), ("verify",)):
        result = run(*args, "--index", str(ix))
        assert result.exit_code == 1, (args, result.output)
        assert ("Traceback" not in result.output and result.exception is None) or isinstance(
            result.exception, SystemExit
        )
    verify = run("verify", "--index", str(ix))
    assert "damaged" in verify.output or "not a readable" in verify.output
    (ix / FILE_NAME).write_bytes(b"garbage" * 100)
    result = run("search", "x", "--index", str(ix))
    assert result.exit_code == 1 and "not a readable ctxselect index" in result.output


@pytest.mark.parametrize("paths", ["", [""], ["docs", ""]])
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    tmp_path, tree, paths, monkeypatch
):
    """Path('') resolves to the current folder: indexing it would read what nobody named."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(cs.ConfigError, match=r"a path is empty \(''\)"):
        cs.index_paths(paths, tmp_path / "ix")
    assert not (tmp_path / "ix").exists()
    cs.index_paths([tree], tmp_path / "ix")
    before = _ids(tmp_path / "ix")
    with pytest.raises(cs.ConfigError, match=r"a path is empty \(''\)"):
        cs.add_paths(paths, tmp_path / "ix")
    assert _ids(tmp_path / "ix") == before
    result = run("index", "", "--index", str(tmp_path / "ix2"))
    assert result.exit_code == 1 and "a path is empty ('')" in result.output
    assert not (tmp_path / "ix2").exists()


@pytest.mark.parametrize("fraction", ["0.5", -1, float("nan"), True, [1]])
def test_a_bad_compact_fraction_is_refused_before_anything_is_written(tmp_path, tree, fraction):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    (tree / "d.txt").write_text("delta dates", encoding="utf-8")
    doc = cs.Document(doc_id="e", text="epsilon")
    calls = [
        lambda: cs.index_paths([tree], ix, compact_fraction=fraction),
        lambda: cs.add_paths([tree / "d.txt"], ix, compact_fraction=fraction),
        lambda: cs.add_documents([doc], ix, compact_fraction=fraction),
        lambda: cs.remove_documents(["a.txt"], ix, compact_fraction=fraction),
    ]
    for call in calls:
        with pytest.raises(cs.ConfigError, match="compact_fraction must be a number >= 0"):
            call()
    assert _ids(ix) == {"a.txt", "b.txt", "c.txt"}  # it raised after the commit before


@pytest.mark.parametrize("flag", ["follow_symlinks", "progress"])
def test_flags_that_are_not_booleans_are_refused(tmp_path, tree, flag):
    # follow_symlinks="no" is truthy: it read the files the links lead to
    with pytest.raises(cs.ConfigError, match=f"{flag} must be True or False, got 'no'"):
        cs.index_paths([tree], tmp_path / "ix", **{flag: "no"})
    with pytest.raises(cs.ConfigError, match=f"{flag} must be True or False"):
        cs.add_paths([tree / "a.txt"], tmp_path / "ix", **{flag: "no"})
    assert not (tmp_path / "ix").exists()


def test_add_of_a_file_that_is_now_empty_removes_it_as_a_rescan_would(tmp_path, tree):
    ix = tmp_path / "ix"
    cs.index_paths([tree], ix)
    (tree / "a.txt").write_text("  \n", encoding="utf-8")
    report = cs.add_paths([tree / "a.txt"], ix)
    assert (report.removed, report.skipped["empty"]) == (1, 1)
    assert _ids(ix) == {"b.txt", "c.txt"}  # no stale "alpha apples" served any more
    with cs.open_index(ix) as idx:
        assert idx.search("alpha apples", 3) == []
    assert cs.index_paths([tree], ix).removed == 0  # the re-scan agrees

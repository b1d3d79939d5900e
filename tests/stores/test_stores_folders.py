"""The index folder holds the user's files safely: a sweep deletes only what the store
wrote, a folder of other files is never made an index, a folder that is a file or cannot
be made is one clear error, and a search never writes (nor waits for) an index."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import ctxselect as cs
from _support.old_schemas import as_schema_3
from ctxselect.errors import ConfigError, IndexNotFoundError, IndexWriteError
from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli import store as _store_commands  # noqa: F401
from ctxselect.interfaces.cli.main import cli
from ctxselect.stores.embedded import disk, files
from ctxselect.stores.embedded.lock import WriterLock
from ctxselect.stores.embedded.sqlite import FILE_NAME, SQLiteStore


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(4):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nclock reset synchronizer note{i}\n")
    return folder


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _schema(index: Path) -> str:
    conn = sqlite3.connect(index / FILE_NAME)
    try:
        found = conn.execute("SELECT value FROM manifest WHERE key = 'schema_version'")
        return str(found.fetchone()[0])
    finally:
        conn.close()


def test_verify_and_compact_keep_files_the_store_did_not_write(docs, tmp_path):
    index = tmp_path / "ix"
    cs.index_paths([docs], index)
    arrays = index / files.ARRAYS_DIR
    mine = [arrays / "mine.bin", arrays / "base-notes.txt", arrays / "base-1-x.bin.tmp"]
    for path in mine:
        path.write_text("the user's data\n")
    leftover = arrays / "base-000099-deadbeef.bin"  # a name the store gives: its own
    leftover.write_bytes(b"left by an interrupted write")
    report = cs.verify_index(index)
    assert report.ok and report.removed == (f"{files.ARRAYS_DIR}/{leftover.name}",)
    assert all(p.read_text() == "the user's data\n" for p in mine)
    kept = report.checks[-1]
    assert "3 file(s) not written by ctxselect kept" in kept and "mine.bin" in kept
    (docs / "n9.md").write_text("a new note on fifo depth\n")
    cs.index_paths([docs], index, compact_fraction=0.0)  # a commit that tidies, compacted
    cs.compact_index(index)
    assert all(p.read_text() == "the user's data\n" for p in mine)
    assert cs.verify_index(index).ok


def test_index_refuses_a_folder_of_other_files_and_creates_nothing(docs, tmp_path):
    folder = tmp_path / "p"
    (folder / "arrays").mkdir(parents=True)
    (folder / "arrays" / "data.npy").write_text("data\n")
    (folder / "notes.txt").write_text("notes\n")
    before = _tree(folder)
    with pytest.raises(ConfigError, match="is not a ctxselect index") as caught:
        cs.index_paths([docs], folder)
    message = str(caught.value)
    assert "notes.txt" in message and "arrays/data.npy" in message and "rm -r" not in message
    assert _tree(folder) == before
    result = CliRunner().invoke(cli, ["index", str(docs), "--index", str(folder)])
    assert result.exit_code == 1 and "not a ctxselect index" in result.stderr
    assert "rm -r" not in result.stderr and _tree(folder) == before
    (folder / FILE_NAME).write_bytes(b"")  # an empty file an older ctxselect left there
    with pytest.raises(ConfigError, match="is not a ctxselect index"):
        cs.index_paths([docs], folder)
    assert (folder / FILE_NAME).stat().st_size == 0 and (folder / "notes.txt").exists()


def test_an_index_folder_that_is_a_file_or_cannot_be_made_is_one_clear_error(
    docs, tmp_path, monkeypatch
):
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    for target in (afile, afile / "sub"):
        with pytest.raises(ConfigError, match=re.escape(f"{afile} is a file, not a folder")):
            cs.index_paths([docs], target)
    with pytest.raises(IndexNotFoundError, match="it is a file, not an index folder"):
        cs.verify_index(afile)
    assert afile.read_text() == "not a folder\n"

    def refused(self: disk.Disk, path: Path) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(disk.Disk, "mkdir", refused)
    with pytest.raises(IndexWriteError, match=r"cannot create index folder .*Permission denied"):
        cs.index_paths([docs], tmp_path / "new" / "ix")


def test_a_search_neither_upgrades_nor_waits_for_a_schema_3_index(docs, tmp_path):
    index = tmp_path / "ix"
    cs.index_paths([docs], index)
    as_schema_3(index)
    with WriterLock(index):  # another writer runs: a search still answers at once
        started = time.monotonic()
        with cs.open_index(index) as idx:
            assert idx.search("synchronizer", 2)
        assert time.monotonic() - started < 5
    assert _schema(index) == "3"
    cs.index_paths([docs], index)  # a writer upgrades it
    assert _schema(index) == "4"
    store = SQLiteStore(index)
    assert store.schema_version == 4
    store.close()

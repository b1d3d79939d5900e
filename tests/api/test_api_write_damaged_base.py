"""A write never builds on a damaged base file: index, add, remove and compact refuse it
with one line naming the file and the rebuild, change nothing, and a rebuild repairs it.
The check is a ``stat`` when the file is as written: only then is the file not read."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import ctxselect as cs
from _support.note_index import note_index
from ctxselect.errors import IndexCorruptError
from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli import store as _store_commands  # noqa: F401
from ctxselect.interfaces.cli.main import cli
from ctxselect.stores.embedded import integrity


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    """A corpus folder and a compacted index of it."""
    return note_index(tmp_path)


def _base(index: Path) -> Path:
    (found,) = sorted((index / "arrays").glob("base-*.bin"))
    return found


def _truncate(path: Path) -> None:
    os.truncate(path, 100)


def _overwrite(path: Path) -> None:
    """Same size, bytes changed in the middle, modification time put back."""
    st = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(st.st_size // 2)
        handle.write(b"\xff" * 16)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


DAMAGE = {"truncated": _truncate, "overwritten": _overwrite}


def _state(index: Path) -> tuple[object, ...]:
    conn = sqlite3.connect(index / "index.sqlite")
    try:
        manifest = dict(conn.execute("SELECT key, value FROM manifest"))
        docs = conn.execute("SELECT doc_id, content_hash FROM documents ORDER BY doc_id").fetchall()
    finally:
        conn.close()
    return manifest["generation"], manifest["segments"], docs


def _writes(docs: Path, index: Path) -> dict[str, Callable[[], object]]:
    def touched() -> object:
        (docs / "n1.md").write_text("# Note 1\n\nclock drift changed text\n")
        return cs.index_paths([docs], index)

    def added() -> object:
        (docs / "new.md").write_text("# New\n\nbrand new note about clocks\n")
        return cs.add_paths([docs / "new.md"], index)

    return {
        "index touched": touched,
        "index unchanged": lambda: cs.index_paths([docs], index),
        "add": added,
        "remove": lambda: cs.remove_documents(["n2.md"], index),
        "compact": lambda: cs.compact_index(index),
    }


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("write", ["index touched", "index unchanged", "add", "remove", "compact"])
def test_write_on_damaged_base_refused(built, damage: str, write: str) -> None:
    docs, index = built
    base = _base(index)
    DAMAGE[damage](base)
    before, damaged_bytes = _state(index), base.read_bytes()
    with pytest.raises(IndexCorruptError) as caught:
        _writes(docs, index)[write]()
    message = str(caught.value)
    assert str(base) in message and "nothing was written" in message
    assert f"ctxselect index --rebuild --index {index}" in message
    assert _state(index) == before  # no delta, no generation, no document changed
    assert base.read_bytes() == damaged_bytes  # the damaged file is kept as it was


def test_cli_one_line_names_file_and_rebuild(built) -> None:
    docs, index = built
    _truncate(_base(index))
    result = CliRunner().invoke(cli, ["index", str(docs), "--index", str(index)])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert str(_base(index)) in result.stderr and "index --rebuild --index" in result.stderr


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_search_of_a_damaged_base_names_the_same_repair_as_a_write(built, damage: str) -> None:
    # search said `rm -r IX && ctxselect index PATH...`, which loses tuning, while index
    # and verify said --rebuild, the in-place repair
    _docs, index = built
    DAMAGE[damage](_base(index))
    with pytest.raises(IndexCorruptError) as caught, cs.open_index(index) as idx:
        idx.search("clock drift", 3)
    message = str(caught.value)
    assert str(_base(index)) in message and "rm -r" not in message
    assert f"ctxselect index --rebuild --index {index}" in message


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_the_rebuild_the_error_names_repairs_in_place(built, damage: str) -> None:
    docs, index = built
    DAMAGE[damage](_base(index))
    result = CliRunner().invoke(cli, ["index", "--rebuild", "--index", str(index)])
    assert result.exit_code == 0, result.output
    assert cs.verify_index(index).ok
    (docs / "n3.md").write_text("# Note 3\n\nupdated after the repair\n")
    assert cs.index_paths([docs], index).updated == 1


def test_rebuild_rewrites_an_index_that_did_not_change(built) -> None:
    docs, index = built
    assert not cs.index_paths([docs], index).rebuilt  # nothing changed: nothing written
    before = _base(index)
    report = cs.index_paths(index=index, rebuild=True)
    assert report.rebuilt and cs.verify_index(index).ok
    assert set((index / "arrays").glob("base-*.bin")) - {before}  # a new base was written
    with cs.open_index(index) as idx:
        assert idx.search("synchronizer note4", 1)[0].doc_id == "n4.md"
    with pytest.raises(cs.ConfigError, match="rebuild must be True or False"):
        cs.index_paths(index=index, rebuild="yes")  # type: ignore[arg-type]
    watching = CliRunner().invoke(cli, ["index", "--rebuild", "--watch", "--index", str(index)])
    assert watching.exit_code == 2 and "--rebuild rebuilds once" in watching.stderr


def test_rebuild_from_roots_repairs(built) -> None:
    docs, index = built
    _overwrite(_base(index))
    shutil.rmtree(index)  # starting over works too
    cs.index_paths([docs], index)
    assert cs.verify_index(index).ok


def test_settings_rebuild_repairs_in_place(built) -> None:
    docs, index = built
    _truncate(_base(index))
    report = cs.index_paths([docs], index, chunk=cs.ChunkSpec(size=256))
    assert report.rebuilt and cs.verify_index(index).ok


def test_stamped_base_is_not_read(built, monkeypatch: pytest.MonkeyPatch) -> None:
    docs, index = built
    reads: list[Path] = []
    real = integrity.stream_crc
    monkeypatch.setattr(integrity, "stream_crc", lambda p, *a: reads.append(p) or real(p, *a))
    (docs / "n1.md").write_text("# Note 1\n\nclock drift changed text\n")
    report = cs.index_paths([docs], index, compact_fraction=None)
    assert report.updated == 1 and report.delta_segments == 1
    assert reads == []  # the file is as written: a stat, no read


def test_unstamped_base_is_checked_in_full(built, monkeypatch: pytest.MonkeyPatch) -> None:
    """A base without a stamp (written by an older ctxselect) is read in full once."""
    _docs, index = built
    conn = sqlite3.connect(index / "index.sqlite", isolation_level=None)
    base = json.loads(conn.execute("SELECT value FROM manifest WHERE key = 'base'").fetchone()[0])
    base.pop("stamp", None)
    conn.execute("UPDATE manifest SET value = ? WHERE key = 'base'", (json.dumps(base),))
    integrity.seal(conn)
    conn.close()
    monkeypatch.setattr(integrity, "_CHECKED", set())
    _overwrite(_base(index))
    before = _state(index)
    with pytest.raises(IndexCorruptError, match="do not match the checksum"):
        new = cs.Document("x.md", "# X\n\nsome text\n")
        cs.add_documents([new], index, compact_fraction=None)
    assert _state(index) == before


def test_copied_index_is_read_once_then_written(built, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy's base has new file times: it is checksummed (not refused) and written on."""
    docs, index = built
    copy = index.parent / "copy"
    shutil.copytree(index, copy)
    monkeypatch.setattr(integrity, "_CHECKED", set())
    reads: list[Path] = []
    real = integrity.stream_crc
    monkeypatch.setattr(integrity, "stream_crc", lambda p, *a: reads.append(p) or real(p, *a))
    (docs / "n1.md").write_text("# Note 1\n\nclock drift changed text\n")
    report = cs.index_paths([docs], copy, compact_fraction=None)
    assert report.updated == 1 and reads == [_base(copy)]

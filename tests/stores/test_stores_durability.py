"""The three durability rules one by one (the power-cut simulation checks them together):
synchronous commits, new files durable before the commit naming them, deletions only
after a durable commit."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from power_disk import RecordingDisk

import ctxselect as cs
from ctxselect.stores.embedded import disk, files
from ctxselect.stores.embedded.sqlite import SQLiteStore

SPECS = (
    cs.ChunkSpec(chunker="paragraph", size=60, tokenizer="chars4"),
    cs.ChunkSpec(chunker="paragraph", size=90, tokenizer="chars4"),
)


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for i, text in enumerate(["alpha beta gamma", "omega sigma", "kappa lambda mu mu"]):
        (folder / f"f{i}.txt").write_text(f"{text}\n\n{text} again\n", encoding="utf-8")
    return folder


def _manifest(ix: Path) -> dict[str, object]:
    conn = sqlite3.connect(ix / "index.sqlite")
    try:
        return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM manifest")}
    finally:
        conn.close()


def test_commits_are_synchronous_full(tmp_path):
    store = SQLiteStore(tmp_path / "ix", create=True)
    try:
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        store.close()


def test_a_rebuild_keeps_the_base_it_replaced_until_the_next_one(tmp_path):
    corpus, ix = _corpus(tmp_path / "c"), tmp_path / "ix"
    cs.index_paths([corpus], ix, chunk=SPECS[0])
    first = _manifest(ix)["base"]["file"]  # type: ignore[index]
    cs.index_paths([], ix, chunk=SPECS[1])  # changed settings: a full rebuild
    second = _manifest(ix)
    assert second["previous_base"] == first and (ix / first).is_file()
    cs.index_paths([], ix, chunk=SPECS[0])
    third = _manifest(ix)
    assert third["previous_base"] == second["base"]["file"]  # type: ignore[index]
    assert not (ix / first).exists()  # deleted after a durable commit stopped naming it
    assert cs.verify_index(ix).ok


def test_new_files_and_folders_are_durable_before_the_commit_naming_them(tmp_path):
    corpus, root = _corpus(tmp_path / "c"), tmp_path / "live"
    root.mkdir()
    recorder = RecordingDisk(root)
    with disk.using(recorder):
        cs.index_paths([corpus], root / "ix", chunk=SPECS[0])
        cs.index_paths([], root / "ix", chunk=SPECS[1])
    ops = [(op.kind, op.path, op.extra) for op in recorder.ops]
    kinds = [k for k, _, _ in ops]
    assert kinds[:2] == ["mkdir", "fsync_dir"] and ops[1][1] == "."  # ix/ in its parent
    arrays = kinds.index("mkdir", 1)
    assert ops[arrays][1] == "ix/arrays" and ops[arrays + 1][:2] == ("fsync_dir", "ix")
    named = [i for i, (k, p, _) in enumerate(ops) if k == "rename" and p.endswith(".bin.tmp")]
    assert len(named) == 2
    for at in named:
        tmp, final = ops[at][1], ops[at][2]
        assert ops[at - 2][:2] == ("write", tmp) and ops[at - 1][:2] == ("fsync", tmp)
        assert ops[at + 1][:2] == ("fsync_dir", "ix/arrays")
        commit = next(i for i in range(at, len(ops)) if ops[i][0] == "commit")
        image, durable = ops[commit][2]
        manifest = _image_manifest(image, tmp_path / f"image{at}.sqlite")
        assert durable and final.removeprefix("ix/") in manifest["base"]


def _image_manifest(image: bytes, where: Path) -> dict[str, str]:
    """The manifest rows of a database image (a WAL database: read from a file)."""
    where.write_bytes(image)
    conn = sqlite3.connect(where)
    try:
        return dict(conn.execute("SELECT key, value FROM manifest"))
    finally:
        conn.close()


def test_verify_deletes_leftovers_only_once_every_commit_is_durable(tmp_path):
    corpus, ix = _corpus(tmp_path / "c"), tmp_path / "ix"
    cs.index_paths([corpus], ix, chunk=SPECS[0])
    reader = sqlite3.connect(ix / "index.sqlite", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM manifest").fetchone()  # pins this generation
    (corpus / "f9.txt").write_text("new words here\n", encoding="utf-8")
    cs.index_paths([], ix)  # a commit the pinned reader keeps out of the checkpoint
    leftover = ix / files.ARRAYS_DIR / "base-000099-deadbeef.bin"
    leftover.write_bytes(b"left by an interrupted write")
    try:
        report = cs.verify_index(ix)
        assert report.ok and not report.removed and leftover.exists()
    finally:
        reader.execute("COMMIT")
        reader.close()
    report = cs.verify_index(ix)
    assert report.ok and report.removed == (f"{files.ARRAYS_DIR}/{leftover.name}",)
    assert not leftover.exists()

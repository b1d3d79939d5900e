"""A full rebuild writes a new base: the manifest's ``compacted`` time is that write's.

docs/formats.md: ``compacted`` is "time of the last base segment"; `ctxselect info` says
"up to date (compacted TIME)". A rebuild with changed settings used to keep the first
build's time.
"""

from __future__ import annotations

import itertools

import ctxselect as cs
from ctxselect.api import sync
from ctxselect.config import ChunkSpec


def test_a_settings_rebuild_dates_the_new_base(tmp_path, monkeypatch):
    clock = (f"2030-01-01T00:00:{second:02}+00:00" for second in itertools.count())
    monkeypatch.setattr(sync, "now", lambda: next(clock))
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(4):
        (root / f"d{i}.md").write_text(f"# D{i}\n\n" + "alpha beta " * 60, encoding="utf-8")
    ix = str(tmp_path / "ix")
    cs.index_paths([str(root)], ix)
    with cs.open_index(ix) as idx:
        first = idx.info()
    report = cs.index_paths([str(root)], ix, chunk=ChunkSpec(size=32))
    assert report.rebuilt and report.compacted
    with cs.open_index(ix) as idx:
        after = idx.info()
    assert after.updated != first.updated
    assert after.compacted == after.updated

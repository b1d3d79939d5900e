"""A folder of short Markdown notes and an index of it, for the store-damage tests."""

from __future__ import annotations

from pathlib import Path

import ctxselect as cs


def note_folder(folder: Path, count: int, words: str) -> Path:
    """Write ``count`` notes ``n0.md``... (``# Note i``, then ``words`` and ``note{i}``)."""
    folder.mkdir()
    for i in range(count):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\n{words} note{i} text\n")
    return folder


def note_index(tmp_path: Path, count: int = 6) -> tuple[Path, Path]:
    """``tmp_path/docs`` with ``count`` notes and ``tmp_path/ix``, a compacted index of it."""
    docs = note_folder(tmp_path / "docs", count, "clock reset synchronizer")
    index = tmp_path / "ix"
    cs.index_paths([docs], index)
    return docs, index

"""A first write that fails: an executor whose workers never start, and a small corpus."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ctxselect.errors import WorkerError


class FailingExecutor:
    """An executor whose workers never start (a pool spawned without a __main__ guard);
    ``during`` runs first, inside the write's lock."""

    workers = 2

    def __init__(self, during: Callable[[], None] = lambda: None) -> None:
        self.during = during

    def map(self, task: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        self.during()
        raise WorkerError("a worker process died before it started: nothing was written")

    def close(self) -> None:
        pass


def three_notes(tmp_path: Path) -> Path:
    """A folder of three small Markdown notes under ``tmp_path``."""
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(3):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\nalpha beta {i}\n", encoding="utf-8")
    return root

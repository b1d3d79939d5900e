"""``chunk_ids[row]`` and ``row_of[chunk_id]`` for rows read lazily: what both stores' lazy
rows use, asking the store one row at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any


class ChunkIdOfRow(Sequence[str]):
    """``chunk_ids[row]``: the chunk id a row holds (ties across segments need a few).

    Args:
        chunk_id: row -> the chunk id it holds.
        size: The number of rows.
    """

    def __init__(self, chunk_id: Callable[[int], str], size: int) -> None:
        self._chunk_id, self._size = chunk_id, size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(self._size))]
        return self._chunk_id(int(row))


class RowOfChunk(Mapping[str, int]):
    """The live row of a chunk id, asked of the store row by row (nothing is loaded).

    Args:
        find: chunk id -> its row, or None when no live row holds it.
        chunk_id: row -> the chunk id it holds.
        size: The number of rows.
    """

    def __init__(
        self, find: Callable[[str], int | None], chunk_id: Callable[[int], str], size: int
    ) -> None:
        self._find, self._chunk_id, self._size = find, chunk_id, size

    def __getitem__(self, chunk_id: str) -> int:
        row = self._find(chunk_id)
        if row is None:
            raise KeyError(chunk_id)
        return row

    def get(self, chunk_id: str, default: Any = None) -> Any:
        row = self._find(chunk_id)
        return default if row is None else row

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self._find(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        return (self._chunk_id(i) for i in range(self._size))

    def __len__(self) -> int:
        return self._size


__all__ = ["ChunkIdOfRow", "RowOfChunk"]

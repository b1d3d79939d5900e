"""The reads of a Milvus snapshot made before, done later: per hit and per first use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def lazy_reads(rows: Any, arrays: Mapping[str, Any]) -> dict[str, Callable[[], Any]]:
    """name -> a read of ``rows`` (``MilvusLazyRows``) or ``arrays`` (a lazy base segment)
    that goes to the server when called."""
    return {
        "chunk": lambda: rows.chunk(0),
        "hit": lambda: rows.hit(0, 1, 1.0),
        "chunk_ids": lambda: rows.chunk_ids[0],
        "row_of": lambda: rows.row_of.get("cache.md#0"),
        "all_doc_ids": rows.all_doc_ids,
        "lazy array": lambda: [arrays[name] for name in arrays],
    }

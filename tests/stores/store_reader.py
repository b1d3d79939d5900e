"""A reader for the contract suite's concurrency test: what one pinned read of a store saw.

Run as a script (``python store_reader.py URI STOP_FILE``) it reads in a loop, printing
one JSON line per read, until ``STOP_FILE`` exists; the test imports :func:`read_once`
to run the same reads in a thread.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from ctxselect.stores import Store, open_store

_VERSION = re.compile(r"\bv(\d+)\b")
DOC_IDS = ("a", "b")
"""The two documents every round of the writer replaces together, in one commit."""


def versions(text: str) -> list[int]:
    """Return every round number (``v7`` -> 7) written into ``text``."""
    return [int(v) for v in _VERSION.findall(text)]


def read_once(store: Store) -> dict[str, Any]:
    """Read the generation, both documents and their chunks inside one pinned read."""
    with store.reading():
        generation = store.generation()
        snap = store.snapshot(eager=True)
        docs = [store.get_document(doc_id).text for doc_id in DOC_IDS]
        table = store.chunk_table()
    live = [snap.rows.hit(row, 1, 0.0) for row in snap.rows.row_of.values()]
    return {
        "generation": generation,
        "snapshot_generation": snap.generation,
        "document_versions": sorted({v for text in docs for v in versions(text)}),
        "snapshot_versions": sorted({v for hit in live for v in versions(hit.text)}),
        "table_versions": sorted({v for text in table.texts for v in versions(text)}),
        "chunks": len(table.chunk_ids),
    }


def main(uri: str, stop: Path) -> None:
    """Read ``uri`` until ``stop`` exists, one JSON line per read."""
    store = open_store(uri)
    try:
        while not stop.exists():
            print(json.dumps(read_once(store)), flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))

"""SQLite page size: large pages for an index whose first build brings much text.

A document row (a few KB of text) fills SQLite's default 4 KB pages badly: at 1M chunks
(100,000 documents of 3.3 KB) 74 of the documents table's 411 MB were empty page space;
16 KB pages still left 48 MB, 64 KB pages (SQLite's largest) 9 MB. But a file holds at
least one page per table and index (15 of them), so 64 KB pages would make a small
index's file about 1 MB instead of 80 KB. Hence: a new file starts with 4 KB pages, and
the first build of an empty index that brings at least ``LARGE_TEXT`` characters of
document text switches it to ``LARGE_PAGES`` first (the file is empty then, so the
``VACUUM`` that applies the new size rewrites only the schema). An existing file keeps
its page size; a file another connection has open keeps it too (the switch needs the
rollback journal for a moment, which needs the file to itself).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence

from ctxselect.types import Document

LARGE_PAGES = 65536
LARGE_TEXT = 16 << 20


def fit(conn: sqlite3.Connection, documents: Sequence[Document]) -> bool:
    """Give an empty index file large pages if ``documents`` are large; True if switched.

    Must run outside a transaction, by the writer (which holds the index's lock).
    """
    if sum(len(d.text) for d in documents) < LARGE_TEXT:
        return False
    if int(conn.execute("PRAGMA page_size").fetchone()[0]) >= LARGE_PAGES:
        return False
    if conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None:
        return False
    timeout = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    conn.execute("PRAGMA busy_timeout=0")  # a reader has it open: keep 4 KB, do not wait
    switched = False
    try:
        # SQLite answers with the mode it is in: still "wal" when another connection is open
        if conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete":
            conn.execute(f"PRAGMA page_size={LARGE_PAGES}")
            conn.execute("VACUUM")
            switched = True
    except sqlite3.OperationalError:
        pass  # locked by another connection: the file keeps its pages, nothing else changes
    finally:
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA busy_timeout={timeout}")
    return switched

"""Document metadata in the embedded store: what ``--where key=value`` filters on.

Every document has ``kind``, ``title`` and ``path`` (its doc id) from the documents
table. User fields (a BEIR line's ``metadata``, Markdown front matter, a code file's
``language``) live in ``doc_fields``, one row per (document, key), added by schema 4;
an index of an older schema has no such table until it is upgraded, and its documents
simply have no user fields. Which value wins on a clash is
:func:`ctxselect.stores.doc_fields.merged`, shared with the Milvus store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ctxselect.stores import doc_fields
from ctxselect.types import Document

TABLE = """
CREATE TABLE IF NOT EXISTS doc_fields (
    doc_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (doc_id, key)) WITHOUT ROWID
"""
_BATCH = 500  # doc ids per IN (...) query: below SQLite's variable limit


def has_table(conn: sqlite3.Connection) -> bool:
    """Whether the index stores user fields (schema 4 on)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'doc_fields'"
    ).fetchone()
    return found is not None


def write(conn: sqlite3.Connection, documents: Sequence[Document]) -> None:
    """Store the user fields of ``documents`` (their old fields were deleted first)."""
    rows = [(d.doc_id, k, v) for d in documents for k, v in d.fields]
    if rows:
        conn.executemany("INSERT OR REPLACE INTO doc_fields VALUES (?, ?, ?)", rows)


def delete(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> None:
    """Forget the user fields of ``doc_ids``."""
    if doc_ids and has_table(conn):
        conn.executemany("DELETE FROM doc_fields WHERE doc_id = ?", [(d,) for d in doc_ids])


def read(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """Return the metadata of ``doc_ids`` that are stored: built-in keys and user fields,
    merged by :func:`ctxselect.stores.doc_fields.merged`."""
    own: dict[str, tuple[str, str]] = {}
    user: dict[str, dict[str, str]] = {}
    with_user = has_table(conn)
    ids = list(doc_ids)
    for at in range(0, len(ids), _BATCH):
        part = ids[at : at + _BATCH]
        marks = ",".join("?" * len(part))
        for doc_id, kind, title in conn.execute(
            f"SELECT doc_id, kind, title FROM documents WHERE doc_id IN ({marks})", part
        ):
            own[doc_id] = (kind, title)
        if with_user:
            for doc_id, key, value in conn.execute(
                f"SELECT doc_id, key, value FROM doc_fields WHERE doc_id IN ({marks})", part
            ):
                user.setdefault(doc_id, {})[key] = value
    return {
        doc_id: doc_fields.merged(kind, doc_id, title, user.get(doc_id, {}))
        for doc_id, (kind, title) in own.items()
    }


def keys(conn: sqlite3.Connection) -> list[str]:
    """Every metadata key stored: the built-in ones, then the user fields (sorted)."""
    user = []
    if has_table(conn):
        user = [k for (k,) in conn.execute("SELECT DISTINCT key FROM doc_fields")]
    return doc_fields.all_keys(user)

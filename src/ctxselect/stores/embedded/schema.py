"""The tables of ``index.sqlite`` and the schema version they make up.

``sqlite`` creates them in a new index and ``migrate`` re-creates the missing ones when
it upgrades an older index; both read them from here.
"""

from __future__ import annotations

from ctxselect.stores.embedded import fields
from ctxselect.stores.embedded.vectors import TABLE as VECTORS_TABLE

SCHEMA_VERSION = 4

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL,
    title TEXT NOT NULL, content_hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, header TEXT NOT NULL,
    n_tokens INTEGER NOT NULL, parent_id TEXT NOT NULL, text TEXT);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS deltas (
    seg INTEGER NOT NULL, name TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (seg, name));
CREATE TABLE IF NOT EXISTS dead_rows (id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS dead_terms (
    mode TEXT NOT NULL, term TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (mode, term)) WITHOUT ROWID;
"""
    + VECTORS_TABLE
    + ";"
    + fields.TABLE
    + ";"
)

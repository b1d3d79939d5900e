"""Chunk texts stored once: a chunk row holds its document's offsets, not a copy of the text.

Every chunker slices its chunks from the document (``chunk.text ==
document.text[start:end]``; a heading path or title lives in ``header``), so schema 3
stores ``chunks.text`` as NULL for such a chunk and reads it back as the document's span.
Only a text that is not that span (a chunker that rewrites text) or that SQLite cannot
slice exactly (a document holding NUL characters: SQLite's ``substr`` stops at them) is
stored. SQLite's ``substr`` counts characters as Python slicing does for any text SQLite
can store (UTF-8, no lone surrogates), so a span read in SQL and one sliced in Python are
the same string.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ctxselect.errors import IndexCorruptError
from ctxselect.types import Chunk

# The chunk's text as every reader sees it: the stored text, else its document's span.
# One row at a time (a hit, a chunk): SQLite slices it, no document is copied out.
TEXT = 'coalesce(c.text, substr(d.text, c.start + 1, c."end" - c.start))'
FROM = "chunks c LEFT JOIN documents d ON d.doc_id = c.doc_id"
# Many rows (every chunk): Python slices each document once read, a window at a time.
_WINDOW = 4096
_BATCH = 500  # SQLite's bound-parameter limit per statement


def stored_texts(chunks: Sequence[Chunk], documents: Mapping[str, str]) -> list[str | None]:
    """Return what ``chunks.text`` holds for each chunk: None when it is its document's span.

    Args:
        chunks: The chunks a commit inserts.
        documents: ``{doc_id: text}`` of the documents the same commit stores; a chunk of
            another document keeps its own text (it cannot be checked against its span).
    """
    clean: dict[str, bool] = {}
    out: list[str | None] = []
    for c in chunks:
        doc_text = documents.get(c.doc_id)
        if doc_text is not None and c.doc_id not in clean:
            clean[c.doc_id] = "\x00" not in doc_text
        if doc_text is None or not clean[c.doc_id] or not 0 <= c.start <= c.end:
            out.append(c.text)
        else:
            out.append(None if doc_text[c.start : c.end] == c.text else c.text)
    return out


def missing(folder: Path, chunk_id: Any) -> IndexCorruptError:
    """The error for a chunk whose text is neither stored nor in a document (damage)."""
    return IndexCorruptError(
        f"{folder / 'index.sqlite'} is damaged (chunk {chunk_id!r} has no text and no "
        f"document to take it from): run `ctxselect verify --index {folder}`, then rebuild "
        f"the index with `rm -r {folder} && ctxselect index PATH... --index {folder}`"
    )


def checked(folder: Path, row: tuple[Any, ...], at: int, id_at: int = 0) -> tuple[Any, ...]:
    """Return ``row`` if its text (column ``at``) was found; else raise :func:`missing`."""
    if row[at] is None:
        raise missing(folder, row[id_at])
    return row


class Layout(NamedTuple):
    """Where a row read from ``chunks`` holds the columns :func:`filled` needs."""

    ident: int
    doc: int
    start: int
    end: int
    text: int


def filled(
    conn: sqlite3.Connection,
    rows: Iterable[tuple[Any, ...]],
    at: Layout,
    folder: Path,
    *,
    strict: bool = True,
) -> Iterator[tuple[Any, ...]]:
    """Yield ``rows`` (raw ``chunks`` rows) with each NULL text replaced by its span.

    Rows are taken a window at a time and each window's documents are read in one batch
    (chunk_id order keeps a document's chunks together), so memory holds one window's
    documents, never the corpus, and a document is read once per window, not once per
    chunk as :data:`TEXT` in SQL would (quadratic for a long document of many chunks).

    Raises:
        IndexCorruptError: A chunk has no stored text and no document (unless not
            ``strict``: its text is then None, as :data:`TEXT` gives it).
    """
    it = iter(rows)
    while window := list(itertools.islice(it, _WINDOW)):
        need = sorted({row[at.doc] for row in window if row[at.text] is None})
        docs = _documents(conn, need)
        for row in window:
            if row[at.text] is None:
                doc = docs.get(row[at.doc])
                if doc is None and strict:
                    raise missing(folder, row[at.ident])
                span = None if doc is None else doc[row[at.start] : row[at.end]]
                row = (*row[: at.text], span, *row[at.text + 1 :])
            yield row


def _documents(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(0, len(doc_ids), _BATCH):
        part = doc_ids[i : i + _BATCH]
        sql = f"SELECT doc_id, text FROM documents WHERE doc_id IN ({','.join('?' * len(part))})"
        out.update(conn.execute(sql, part))
    return out

"""What the write verbs check before any index folder is made (``api.write``).

A write that fails on its input must leave nothing behind, so paths, settings and
documents are checked first: one path is one path (not its letters), a setting of the
wrong type or an unknown chunker is refused, and documents the index cannot hold (an
empty or repeated ``doc_id``, text that is not valid UTF-8) are refused by name.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from ctxselect import chunk as _chunk
from ctxselect.api.sync import read_manifest
from ctxselect.config import BM25Params, ChunkSpec
from ctxselect.errors import ConfigError, InputError
from ctxselect.ingest.text import content_hash
from ctxselect.stores import Store
from ctxselect.types import Document

PathArg = str | os.PathLike[str]


def path_list(paths: PathArg | Sequence[PathArg] | None) -> list[PathArg]:
    """The paths asked for: one path (``str`` or ``os.PathLike``) is one path, not letters.

    Raises:
        ConfigError: An item is not a path.
    """
    if paths is None:
        return []
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise ConfigError(
                f"paths must be file or folder paths (str or os.PathLike), got "
                f"{type(item).__name__} {item!r}: pass one path or a list of paths"
            )
    return items


def check_documents(documents: Sequence[Document]) -> list[Document]:
    """Refuse documents the index cannot store, naming the first bad one; give each
    document made without a ``content_hash`` the hash of what it holds (:func:`hashed`).

    Raises:
        InputError: An item is not a Document, a ``doc_id`` is empty or appears twice,
            or a text field holds a lone surrogate (it cannot be stored as UTF-8).
    """
    docs = list(documents)
    seen: set[str] = set()
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InputError(
                f"documents[{i}] is a {type(doc).__name__}, not a ctxselect.Document: "
                f"pass Document(doc_id=..., text=...) values"
            )
        if not isinstance(doc.doc_id, str) or not doc.doc_id.strip():
            raise InputError(
                f"documents[{i}] has an empty doc_id {doc.doc_id!r}: every document needs "
                f"an id to be found, replaced and removed by: give it a non-empty doc_id"
            )
        if doc.doc_id in seen:
            raise InputError(
                f"doc_id {doc.doc_id!r} appears twice in the documents to add: an index "
                f"holds one document per id: merge them or give each its own doc_id"
            )
        seen.add(doc.doc_id)
        for name in ("doc_id", "text", "title", "source", "kind"):
            _check_encodable(doc, name, str(getattr(doc, name)))
        for key, value in doc.fields:
            _check_encodable(doc, f"field {key!r}", f"{key}{value}")
    return [doc if doc.content_hash else hashed(doc) for doc in docs]


def hashed(doc: Document) -> Document:
    """``doc`` with the hash of its title, text, kind and fields as its ``content_hash``.

    The hash is what tells a write that a document changed: without one, a new text for
    the same ``doc_id`` would look unchanged and be dropped. Files and BEIR lines get
    theirs when loaded (title and text); a document made by hand gets this one, which
    also covers the kind and fields it was given.
    """
    extra = "".join(f"\x00{key}\x00{value}" for key, value in doc.fields)
    return dataclasses.replace(
        doc, content_hash=content_hash(doc.title, f"{doc.text}\x00{doc.kind}{extra}")
    )


def _check_encodable(doc: Document, name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"document {doc.doc_id!r} cannot be stored: its {name} holds a lone surrogate "
            f"{value[exc.start]!r} at offset {exc.start}, which is not valid text in UTF-8: "
            f"decode the source with errors='replace' (or remove the character)"
        ) from None


def check_settings(chunk: Any, bm25: Any) -> None:
    """Refuse settings of the wrong type or unknown names before any folder is made.

    Raises:
        ConfigError: ``chunk`` is not a ChunkSpec or ``bm25`` not a BM25Params.
        UnknownNameError: The chunker or tokenizer name is not registered.
    """
    given = dict(chunk=chunk, bm25=bm25)  # parameter names (not the bm25 mode's name)
    for (name, value), kind in zip(given.items(), (ChunkSpec, BM25Params), strict=True):
        if value is not None and not isinstance(value, kind):
            raise ConfigError(
                f"{name} must be a ctxselect.{kind.__name__} (or None for the index's own "
                f"settings), got {type(value).__name__}: pass {kind.__name__}(...)"
            )
    if chunk is not None:
        _chunk.make_chunker(chunk)


def recorded_roots(store: Store) -> list[str]:
    """The roots a re-scan walks: the index's own, each still there.

    Raises:
        InputError: A recorded root is gone (the re-scan would remove its documents).
    """
    roots = list(read_manifest(store).roots)
    gone = [r for r in roots if not os.path.exists(r)]
    if gone:
        raise InputError(
            f"the index {store.uri} was built from {', '.join(map(repr, gone))}, which no "
            f"longer exists, so nothing was changed: restore it, or name the roots to keep "
            f"(`ctxselect index PATH... --index {store.uri}`; documents under roots not "
            f"named are removed)"
        )
    return roots

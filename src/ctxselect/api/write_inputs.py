"""What the write verbs check before any index folder is made (``api.write``).

A write that fails on its input must leave nothing behind, so paths, settings and
documents are checked first: one path is one path (not its letters), a setting of the
wrong type or an unknown chunker is refused, and documents the index cannot hold (an
empty or repeated ``doc_id``, text that is not valid UTF-8) are refused by name.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxselect import chunk as _chunk
from ctxselect import embed as _embed
from ctxselect.api.modes import NO_EMBEDDER
from ctxselect.api.sync import read_manifest
from ctxselect.config import (
    BM25Params,
    ChunkSpec,
    resolve_index_dir,
)
from ctxselect.errors import ConfigError, InputError, UnknownNameError
from ctxselect.index.plan import Plan
from ctxselect.ingest.files import base_folder
from ctxselect.ingest.report import IngestReport, first_few
from ctxselect.ingest.text import content_hash
from ctxselect.ingest.walk import inside
from ctxselect.stores import Store
from ctxselect.stores.open import split_uri
from ctxselect.types import Document

PathArg = str | os.PathLike[str]


def path_list(paths: PathArg | Sequence[PathArg] | None) -> list[PathArg]:
    """The paths asked for: one path (``str`` or ``os.PathLike``) is one path, not letters.

    Raises:
        ConfigError: ``paths`` or an item of it is not a path (bytes, a number, ...).
    """
    if paths is None:
        return []
    if isinstance(paths, bytes) or not isinstance(paths, str | os.PathLike | Iterable):
        raise ConfigError(
            f"paths must be a file or folder path (str or os.PathLike) or a list of them, "
            f"got {type(paths).__name__} {paths!r:.60}: pass one path or a list of paths"
            + (" (decode bytes first: path.decode())" if isinstance(paths, bytes) else "")
        )
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise ConfigError(
                f"paths must be file or folder paths (str or os.PathLike), got "
                f"{type(item).__name__} {item!r}: pass one path or a list of paths"
            )
        if os.fspath(item) == "":  # Path("") is "." once resolved: the whole current folder
            raise ConfigError(
                "a path is empty (''), which would mean the current folder: pass the file "
                "or folder to index (use '.' for the current folder)"
            )
    return items


def check_documents(documents: Sequence[Document]) -> list[Document]:
    """Refuse documents the index cannot store, naming the first bad one; give each
    document made without a ``content_hash`` the hash of what it holds (:func:`hashed`).

    ``fields`` given as a mapping (``{"lang": "py"}``) become ``(key, value)`` pairs.

    Raises:
        InputError: ``documents`` is not a list, an item is not a Document, a text field
            is not a string, a ``doc_id`` is empty or appears twice, or a text field
            holds a lone surrogate (it cannot be stored as UTF-8).
    """
    if isinstance(documents, Document | str | bytes) or not isinstance(documents, Iterable):
        raise InputError(
            f"documents must be a list of ctxselect.Document, got {type(documents).__name__} "
            f"{documents!r:.60}: pass a list, such as [Document(doc_id=..., text=...)]"
        )
    docs = [_typed(i, doc) for i, doc in enumerate(documents)]
    seen: set[str] = set()
    for i, doc in enumerate(docs):
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


def _typed(i: int, doc: object) -> Document:
    """``doc`` checked field by field, its ``fields`` as ``(key, value)`` string pairs."""
    if not isinstance(doc, Document):
        raise InputError(
            f"documents[{i}] is a {type(doc).__name__}, not a ctxselect.Document: "
            f"pass Document(doc_id=..., text=...) values"
        )
    for name in ("doc_id", "text", "title", "source", "content_hash", "kind"):
        value = getattr(doc, name)
        if not isinstance(value, str):
            fix = (  # an id is needed; the other fields may be left empty
                f"pass it as a string, e.g. doc_id={str(value)!r:.60}"
                if name == "doc_id"
                else f"pass {name}='' for none"
            )
            raise InputError(
                f"documents[{i}] ({doc.doc_id!r:.60}) has {name}={value!r:.60}, a "
                f"{type(value).__name__}: every text field of a Document is a str: {fix}"
            )
    fields = doc.fields
    pairs = list(fields.items()) if isinstance(fields, Mapping) else fields
    if (
        isinstance(pairs, str | bytes)
        or not isinstance(pairs, Iterable)
        or not all(
            isinstance(p, tuple | list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            for p in pairs
        )
    ):
        raise InputError(
            f"documents[{i}] ({doc.doc_id!r:.60}) has fields={fields!r:.80}: fields are "
            f"(key, value) pairs of strings or a mapping of str to str: pass e.g. "
            f"fields=(('lang', 'py'),) or {{'lang': 'py'}}"
        )
    as_pairs = tuple((str(k), str(v)) for k, v in pairs)
    return doc if as_pairs == fields else dataclasses.replace(doc, fields=as_pairs)


def doc_id_list(doc_ids: object) -> list[str]:
    """The document ids asked for: one ``str`` is one id, not its letters.

    Raises:
        ConfigError: ``doc_ids`` is None, not a list, or holds something but strings.
    """
    if isinstance(doc_ids, str):
        return [doc_ids]
    items = list(doc_ids) if isinstance(doc_ids, Iterable) else None
    if isinstance(doc_ids, bytes) or items is None or not all(isinstance(d, str) for d in items):
        raise ConfigError(
            f"doc_ids must be a document id (str) or a list of them, got "
            f"{type(doc_ids).__name__} {doc_ids!r:.60}: pass ids as `ctxselect search` "
            f"lists them, such as ['docs/a.md']"
        )
    return [str(d) for d in items]


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


def check_embedder_name(embedder: object) -> None:
    """Refuse an embedder that is neither None, ``"none"``, a registered name nor a model.

    Raises:
        UnknownNameError: ``embedder`` is a name no embedder is registered under (the
            message lists the valid names).
        ConfigError: ``embedder`` is of another type (a number, a list, ...).
    """
    if embedder is None or embedder == NO_EMBEDDER:
        return
    if isinstance(embedder, str):
        if embedder not in _embed.EMBEDDERS.names():
            raise UnknownNameError("embedder", embedder, [*_embed.EMBEDDERS.names(), NO_EMBEDDER])
        return
    if not callable(getattr(embedder, "embed", None)):
        raise ConfigError(
            f"embedder must be an embedder name, a ctxselect.embed.Embedder or None, got "
            f"{type(embedder).__name__} {embedder!r:.60}: pass a name such as "
            f"{', '.join(map(repr, _embed.EMBEDDERS.names()))} or {NO_EMBEDDER!r}"
        )


def check_settings(chunk: Any, bm25: Any, embedder: object = None) -> None:
    """Refuse settings of the wrong type or unknown names before any folder is made.

    Raises:
        ConfigError: ``chunk`` is not a ChunkSpec, ``bm25`` not a BM25Params, or
            ``embedder`` not a name or an embedder.
        UnknownNameError: The chunker, tokenizer or embedder name is not registered.
    """
    check_embedder_name(embedder)
    given = dict(chunk=chunk, bm25=bm25)  # parameter names (not the bm25 mode's name)
    for (name, value), kind in zip(given.items(), (ChunkSpec, BM25Params), strict=True):
        if value is not None and not isinstance(value, kind):
            raise ConfigError(
                f"{name} must be a ctxselect.{kind.__name__} (or None for the index's own "
                f"settings), got {type(value).__name__}: pass {kind.__name__}(...)"
            )
    if chunk is not None:
        _chunk.make_chunker(chunk)


def index_location(index: PathArg | None) -> tuple[str, str]:
    """(the index as the store opens it, the folder a scan skips: "" for none).

    A folder becomes absolute, so a change of working directory cannot move it, and a
    scan of a root holding it leaves it out: every write changes it and nothing in it
    is a document. A remote index (``milvus://...``) is a URI, not a path: it is kept as
    given and no folder is skipped.

    Raises:
        ConfigError: ``index`` is not a path, or a ``file:`` URI naming another host.
    """
    uri = resolve_index_dir(index)
    scheme, location = split_uri(uri)
    if scheme != "file":
        return uri, ""
    folder = os.path.abspath(location)
    return folder, folder


def check_outside_index(paths: Sequence[PathArg], folder: str, verb: str) -> None:
    """Refuse a path that is the index ``folder`` itself or lies inside it.

    Such a path holds the index's own files, never documents; named as a root it would
    also replace the index's roots, so the write would remove every document.

    Raises:
        InputError: Naming the path and the index folder, before anything is written.
    """
    if not folder:
        return  # a remote index has no folder here
    real = [os.path.realpath(folder)]
    for path in paths:
        if inside(os.path.realpath(path), real):
            raise InputError(
                f"cannot {verb} {os.fspath(path)!r}: it is the index folder {folder} or lies "
                f"inside it, which holds the index's own files, not documents, so nothing was "
                f"changed: name the folders that hold your files (`ctxselect {verb} PATH... "
                f"--index {folder}`)"
            )


def recorded_roots(store: Store) -> list[str]:
    """The roots a re-scan walks: the index's own, each still there.

    Raises:
        InputError: A recorded root is gone (the re-scan would remove its documents).
    """
    return existing_roots(list(read_manifest(store).roots), store.uri)


def existing_roots(roots: list[str], uri: str) -> list[str]:
    """``roots``, the roots the index ``uri`` records, once each is known to be there.

    Raises:
        InputError: A recorded root is gone (the re-scan would remove its documents).
    """
    gone = [r for r in roots if not os.path.exists(r)]
    if gone:
        raise InputError(
            f"the index {uri} was built from {', '.join(map(repr, gone))}, which no "
            f"longer exists, so nothing was changed: restore it, or name the roots to keep "
            f"(`ctxselect index PATH... --index {uri}`; documents under roots not "
            f"named are removed)"
        )
    return roots


def unknown_ids_hint(missing: Sequence[str], known: Sequence[str], roots: Sequence[str]) -> str:
    """How to name the documents ``missing`` meant: the ids they stand for, when that can be
    told (a path to the file, a near spelling), and what the index's ids look like.

    Args:
        missing: Ids the index lacks.
        known: Every id the index holds.
        roots: The index's roots (ids of files are paths relative to their common folder).
    """
    base = base_folder(roots) if roots else ""
    held = set(known)
    meant = [m for m in dict.fromkeys(_meant(d, held, base) for d in missing) if m]
    asked = f"did you mean {', '.join(map(repr, meant))}? " if meant else ""
    if not held:
        return f"{asked}the index holds no documents yet"
    examples = ", ".join(map(repr, sorted(held)[:3]))
    if not base:
        return (
            f"{asked}document ids are the doc_id each document was added with, such as {examples}"
        )
    return (
        f"{asked}document ids are file paths relative to {base} (the index's roots' folder; "
        f"a BEIR record's id is its _id), such as {examples}"
    )


def _meant(doc_id: str, held: set[str], base: str) -> str:
    """The id of ``held`` that ``doc_id`` most likely stands for, or "" if none is close."""
    as_id = os.path.normpath(doc_id.replace("\\", "/")).replace(os.sep, "/")
    if base and not as_id.startswith("/"):  # relative to here, as a shell completes a path
        as_id = os.path.relpath(os.path.abspath(doc_id), base).replace(os.sep, "/")
    elif base:
        as_id = os.path.relpath(as_id, base).replace(os.sep, "/")
    if as_id in held:
        return as_id
    close = difflib.get_close_matches(doc_id, sorted(held), n=1)
    return close[0] if close else ""


def check_named_loaded(report: IngestReport, paths: Sequence[PathArg]) -> None:
    """Refuse a write when a path the user named gave no document it should have.

    A file named explicitly that cannot be indexed (unreadable, of an unsupported type,
    above the size limit, binary, HTML without body text, a link out of the roots) is
    the user's mistake to hear about, not a count in a report. An empty file is no
    mistake: it is counted as empty.

    Raises:
        InputError: Naming the first such path, why, and the fix; nothing is written.
    """
    for path in paths:
        why = report.skip_reason(os.fspath(path))
        if why:
            raise InputError(f"cannot add {why}; nothing was added")


def note_kept_too_large(plan: Plan, store: Store, too_large: frozenset[str], limit: int) -> None:
    """Name in ``plan.note`` the documents that kept their indexed version because their
    file is above ``limit`` in this run (a lower limit never removes a document).

    The plan counts them with every other document it keeps as indexed: ``unchanged``,
    or ``updated`` in a full rebuild, which rewrites them from the store.
    """
    kept = sorted(store.doc_hashes(sorted(too_large))) if too_large else []
    if not kept:
        return
    said = (
        f"kept the indexed version of {len(kept)} document(s) whose file is above "
        f"--max-bytes {limit:,} ({first_few(kept)}): raise --max-bytes to update them, or "
        f"`ctxselect remove` them"
    )
    plan.note = f"{plan.note}; {said}" if plan.note else said

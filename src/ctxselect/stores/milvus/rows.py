"""Rows a commit writes to Milvus, built from documents, chunks and arrays (no I/O here)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.errors import ConfigError
from ctxselect.stores.base import ModeArrays
from ctxselect.stores.milvus import client as mc
from ctxselect.types import Chunk, Document

ROW_OVERHEAD = 64  # bytes an estimate adds per row for its integer fields


def meta_row(ident: int, kind: str, **fields: Any) -> dict[str, Any]:
    """A row of the meta collection (unset fields empty)."""
    row: dict[str, Any] = {"id": ident, "kind": kind, "key": "", "hkey": 0, "ref": 0}
    row.update(born=0, num=0, info="", data="", v=[0.0, 0.0])
    row.update(fields)
    return row


def group_rows(
    ids: Iterator[int], group: str, arrays: Mapping[str, np.ndarray], born: int
) -> tuple[list[dict[str, Any]], int]:
    """Rows of a blob group (arrays by ``mode/name``), and their bytes."""
    rows, size = [], 0
    for name, array in arrays.items():
        info, pieces = mc.array_pieces(array)
        text = mc.dumps(info)
        for num, piece in enumerate(pieces):
            size += len(piece)
            rows.append(
                meta_row(
                    next(ids),
                    "blob",
                    key=f"{group}/{name}",
                    hkey=mc.hash63(group),
                    born=born,
                    num=num,
                    info=text,
                    data=piece,
                )
            )
    return rows, size


def json_rows(ids: Iterator[int], group: str, value: Any, born: int) -> list[dict]:
    return [
        meta_row(next(ids), "blob", key=group, hkey=mc.hash63(group), born=born, num=n, data=piece)
        for n, piece in enumerate(mc.text_pieces(mc.dumps(value)))
    ]


def doc_rows(
    ids: Iterator[int], documents: Sequence[Document], born: int
) -> tuple[list[dict[str, Any]], int]:
    rows, total = [], 0
    for doc in documents:
        size = utf8(doc.text, doc.doc_id) + ROW_OVERHEAD
        info: dict[str, Any] = {"title": doc.title, "source": doc.source}
        info.update(content_hash=doc.content_hash, kind=doc.kind, bytes=size)
        if doc.fields:  # what --where filters on besides kind, path and title
            info["fields"] = dict(doc.fields)
        first = next(ids)
        for num, piece in enumerate(mc.text_pieces(doc.text)):
            rows.append(
                meta_row(
                    first if num == 0 else next(ids),
                    "doc",
                    key=doc.doc_id,
                    hkey=mc.hash63(doc.doc_id),
                    ref=first,
                    born=born,
                    num=num,
                    info=mc.dumps(info) if num == 0 else "",
                    data=piece,
                )
            )
        total += size
    return rows, total


def chunk_rows(
    ids: Iterator[int], chunks: Sequence[Chunk], documents: Sequence[Document], born: int
) -> tuple[list[dict[str, Any]], int]:
    texts = {d.doc_id: d.text for d in documents}
    rows, total = [], 0
    for c in chunks:
        span = utf8(c.header, c.text) + 1 > mc.TEXT_BYTES
        if span and texts.get(c.doc_id, "")[c.start : c.end] != c.text:
            raise ConfigError(
                f"chunk {c.chunk_id!r} has {len(c.text)} characters and is not its "
                f"document's span, too long for a Milvus text field: index with a "
                f"smaller --chunk-size"
            )
        row = {
            "id": next(ids),
            "chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "dkey": mc.hash63(c.doc_id),
            "ckey": mc.hash63(c.chunk_id),
            "ordinal": c.ordinal,
            "start_char": c.start,
            "end_char": c.end,
            "header": c.header,
            "n_tokens": c.n_tokens,
            "parent_id": c.parent_id,
            "body": "" if span else (f"{c.header}\n{c.text}" if c.header else c.text),
            "span": span,
            "born": born,
        }
        total += chunk_bytes(row)
        rows.append(row)
    return rows, total


def utf8(*texts: str) -> int:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)


def info_of(row: Mapping[str, Any]) -> dict[str, Any]:

    return dict(json.loads(row["info"])) if row.get("info") else {}


def chunk_bytes(row: Mapping[str, Any]) -> int:
    fields = ("chunk_id", "doc_id", "parent_id", "body")
    return utf8(*(str(row[f]) for f in fields)) + ROW_OVERHEAD


def blob_bytes(manifest: Mapping[str, Any]) -> int:
    base = manifest.get("base")
    size = int(base.get("bytes", 0)) if isinstance(base, dict) else 0
    return size + sum(int(n) for n in (manifest.get("segment_bytes") or {}).values())


def flat(arrays: ModeArrays, rowids: np.ndarray) -> dict[str, np.ndarray]:
    flat = {f"{mode}/{name}": a for mode, named in arrays.items() for name, a in named.items()}
    flat["rowids"] = np.asarray(rowids, dtype=np.int64)
    return flat


def add_terms(
    old: Mapping[str, Mapping[str, int]], new: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    out = {mode: dict(terms) for mode, terms in old.items()}
    for mode, terms in new.items():
        into = out.setdefault(mode, {})
        for term, count in terms.items():
            into[term] = into.get(term, 0) + int(count)
    return {mode: terms for mode, terms in out.items() if terms}


def counts(
    current: Mapping[str, Any],
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    dead_docs: Sequence[Mapping[str, Any]],
    dead_chunks: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    before = current.get("counts") or {}
    return {
        "documents": int(before.get("documents", 0)) + len(documents) - len(dead_docs),
        "chunks": int(before.get("chunks", 0)) + len(chunks) - len(dead_chunks),
        "tokens": int(before.get("tokens", 0))
        + sum(c.n_tokens for c in chunks)
        - sum(int(r["n_tokens"]) for r in dead_chunks),
    }


def pending(current: Mapping[str, Any], added: int, dead: int, rebuild: bool) -> dict[str, int]:
    """Rows since the last compaction (a full build starts again from none)."""
    before = {} if rebuild else dict(current.get("pending") or {})
    return {
        "delta_rows": int(before.get("delta_rows", 0)) + (0 if rebuild else added),
        "dead_rows": int(before.get("dead_rows", 0)) + (0 if rebuild else dead),
    }

"""Snapshots of a Milvus index: one generation's rows and segment arrays, read back."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ctxselect.errors import IndexCorruptError, IndexNotFoundError
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.types import ChunkTable, Segments


def snapshot_of(store: Any) -> Snapshot:
    """Return the last committed generation's rows and segments (texts in memory)."""
    generation = store.generation()
    manifest = store.manifest_at(generation)
    base = manifest.get("base")
    if not isinstance(base, dict):
        raise IndexNotFoundError(
            f"index {store.uri} holds nothing yet: add documents with "
            f"`ctxselect index PATH... --index {store.uri}`"
        )
    base_arrays = read_group(store, f"base/{base['gen']}")
    base_rowids = base_arrays.pop("rowids")
    deltas, delta_rowids = [], []
    for seg in manifest.get("segments", []):
        arrays = read_group(store, f"delta/{seg}")
        delta_rowids.append(arrays.pop("rowids"))
        deltas.append(_by_mode(arrays))
    rowids = np.concatenate([base_rowids, *delta_rowids]).astype(np.int64)
    dead_ids = store.tombs(generation, "chunk", rowids.tolist()) if len(rowids) else set()
    dead = np.flatnonzero(np.isin(rowids, sorted(dead_ids))) if dead_ids else None
    terms = read_json(store, manifest["dead_terms"]) if manifest.get("dead_terms") else {}
    rows = _table(store, generation, rowids, dead)
    segments = {
        mode: Segments(
            base=arrays,
            deltas=tuple(d[mode] for d in deltas if mode in d),
            dead=dead,
            dead_terms=terms.get(mode, {}),
        )
        for mode, arrays in _by_mode(base_arrays).items()
    }
    return Snapshot(generation, manifest, rows, segments, rowids)


def _table(store: Any, generation: int, rowids: np.ndarray, dead: np.ndarray | None) -> ChunkTable:
    """Row ``i`` = the chunk with ``rowids[i]``; dead rows stay but leave ``row_of``."""
    by_id = {r["id"]: r for r in store.chunk_rows(generation, live=False)}
    chunks = [by_id.get(int(i)) for i in rowids.tolist()]
    made = [store.to_chunk(r, generation) if r else None for r in chunks]
    cols: list[list[Any]] = [[] for _ in range(7)]
    for chunk in made:
        values = (
            (
                chunk.chunk_id,
                chunk.doc_id,
                chunk.start,
                chunk.end,
                chunk.n_tokens,
                chunk.text,
                chunk.header,
            )
            if chunk
            else ("", "", 0, 0, 0, "", "")
        )
        for col, value in zip(cols, values, strict=True):
            col.append(value)
    row_of = {cid: i for i, cid in enumerate(cols[0])}
    for r in dead.tolist() if dead is not None else []:
        if row_of.get(cols[0][r]) == r:
            del row_of[cols[0][r]]
    row_of.pop("", None)
    c = [tuple(col) for col in cols]
    return ChunkTable(c[0], c[1], c[2], c[3], c[4], c[5], c[6], row_of=row_of)


def read_group(store: Any, group: str) -> dict[str, np.ndarray]:
    """The arrays of one blob group (``base/G`` or ``delta/S``), by ``mode/name``."""
    expr = f'kind == "blob" and hkey == {mc.hash63(group)}'
    rows = mc.query_all(store._client, store.address.meta, expr, ["key", "num", "info", "data"])
    pieces: dict[str, list[dict]] = {}
    for row in rows:
        if row["key"].startswith(group + "/"):
            pieces.setdefault(row["key"][len(group) + 1 :], []).append(row)
    if "rowids" not in pieces:
        raise IndexCorruptError(
            f"index {store.uri} lacks the arrays of {group}: run "
            f"`ctxselect verify --index {store.uri}` and rebuild the index"
        )
    out = {}
    for name, found in pieces.items():
        found.sort(key=lambda r: r["num"])
        out[name] = mc.join_array(json.loads(found[0]["info"]), [r["data"] for r in found])
    return out


def read_json(store: Any, group: str) -> Any:
    """A JSON value stored in pieces under ``group``."""
    expr = f'kind == "blob" and hkey == {mc.hash63(group)}'
    rows = mc.query_all(store._client, store.address.meta, expr, ["key", "num", "data"])
    rows = sorted((r for r in rows if r["key"] == group), key=lambda r: r["num"])
    return json.loads("".join(r["data"] for r in rows)) if rows else {}


def _by_mode(arrays: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, array in arrays.items():
        mode, _, name = key.partition("/")
        out.setdefault(mode, {})[name] = array
    return out

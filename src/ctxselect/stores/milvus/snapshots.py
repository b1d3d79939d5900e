"""Snapshots of a Milvus index: one generation's rows and segment arrays, read back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.config import TEXTS_IN_MEMORY_MAX
from ctxselect.errors import IndexCorruptError, IndexNotFoundError
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus.calls import client_of
from ctxselect.stores.milvus.lazy import MilvusLazyRows
from ctxselect.types import ChunkTable, Rows, Segments


def snapshot_of(store: Any, eager: bool | None, previous: Snapshot | None) -> Snapshot:
    """Return the last committed generation's rows and segments.

    Texts are held in memory up to ``TEXTS_IN_MEMORY_MAX`` chunks (or as ``eager`` says)
    and read per hit above (:class:`MilvusLazyRows`). With ``previous`` (an earlier
    snapshot of the store) on the same base, the base's arrays and the chunks it holds
    in memory are reused: a reload reads the changes, not the corpus.
    """
    generation = store.generation()
    manifest = store.manifest_at(generation)
    base = manifest.get("base")
    if not isinstance(base, dict):
        raise IndexNotFoundError(
            f"index {store.uri} holds nothing yet: add documents with "
            f"`ctxselect index PATH... --index {store.uri}`"
        )
    same = previous if previous is not None and previous.manifest.get("base") == base else None
    by_mode: Mapping[str, Mapping[str, np.ndarray]]
    if same is not None:
        n_base = int(base["rows"])
        base_rowids = same.rowids[:n_base]
        by_mode = {mode: seg.base for mode, seg in same.segments.items()}
    else:
        base_arrays = read_group(store, f"base/{base['gen']}", lazy=True)
        base_rowids = base_arrays.pop("rowids")
        by_mode = _by_mode(base_arrays)
    deltas, delta_rowids = [], []
    for seg in manifest.get("segments", []):
        arrays = read_group(store, f"delta/{seg}")
        delta_rowids.append(arrays.pop("rowids"))
        deltas.append(_by_mode(arrays))
    rowids = np.concatenate([base_rowids, *delta_rowids]).astype(np.int64)
    dead_ids = store.tombs(generation, "chunk", rowids.tolist()) if len(rowids) else set()
    dead = np.flatnonzero(np.isin(rowids, sorted(dead_ids))) if dead_ids else None
    terms = read_json(store, manifest["dead_terms"]) if manifest.get("dead_terms") else {}
    n_chunks = int((manifest.get("counts") or {}).get("chunks", len(rowids)))
    rows: Rows
    if eager if eager is not None else n_chunks <= TEXTS_IN_MEMORY_MAX:
        reuse = same if same is not None and isinstance(same.rows, ChunkTable) else None
        rows = _table(store, generation, rowids, dead, reuse)
    else:
        rows = MilvusLazyRows(store, generation, rowids, dead)
    segments = {
        mode: Segments(
            base=arrays,
            deltas=tuple(d[mode] for d in deltas if mode in d),
            dead=dead,
            dead_terms=terms.get(mode, {}),
        )
        for mode, arrays in by_mode.items()
    }
    return Snapshot(generation, manifest, rows, segments, rowids)


def _table(
    store: Any,
    generation: int,
    rowids: np.ndarray,
    dead: np.ndarray | None,
    previous: Snapshot | None = None,
) -> ChunkTable:
    """Row ``i`` = the chunk with ``rowids[i]``; dead rows stay but leave ``row_of``.

    Rows of ``previous`` (a snapshot on the same base) are reused; only chunks it does
    not hold are read from the server.
    """
    known: dict[int, tuple[Any, ...]] = {}
    if previous is not None and isinstance(previous.rows, ChunkTable):
        old = previous.rows
        cols_old: tuple[Sequence[Any], ...] = (old.chunk_ids, old.doc_ids, old.starts)
        cols_old += (old.ends, old.n_tokens, old.texts, old.headers)
        for i, rid in enumerate(previous.rowids.tolist()):
            if cols_old[0][i]:
                known[rid] = tuple(c[i] for c in cols_old)
    wanted = [int(i) for i in rowids.tolist() if int(i) not in known]
    known.update(_fetch(store, generation, wanted, everything=previous is None))
    cols: list[list[Any]] = [[] for _ in range(7)]
    for rid in rowids.tolist():
        for col, value in zip(cols, known.get(int(rid), _BLANK), strict=True):
            col.append(value)
    row_of = {cid: i for i, cid in enumerate(cols[0])}
    for r in dead.tolist() if dead is not None else []:
        if row_of.get(cols[0][r]) == r:
            del row_of[cols[0][r]]
    row_of.pop("", None)
    c = [tuple(col) for col in cols]
    return ChunkTable(c[0], c[1], c[2], c[3], c[4], c[5], c[6], row_of=row_of)


_BLANK = ("", "", 0, 0, 0, "", "")


def _fetch(
    store: Any, generation: int, ids: list[int], everything: bool
) -> dict[int, tuple[Any, ...]]:
    """Columns of the chunk rows ``ids`` (one scan of the generation when ``everything``)."""
    if everything:
        found = store.chunk_rows(generation, live=False)
    else:
        found = []
        for part in mc.batches(sorted(set(ids))):
            found += store.chunk_rows(generation, f"id in {mc.ints(part)}", live=False)
    out: dict[int, tuple[Any, ...]] = {}
    for row in found:
        c = store.to_chunk(row, generation)
        out[int(row["id"])] = (c.chunk_id, c.doc_id, c.start, c.end, c.n_tokens, c.text, c.header)
    return out


def read_group(store: Any, group: str, lazy: bool = False) -> dict[str, Any]:
    """The arrays of one blob group (``base/G`` or ``delta/S``), by ``mode/name``.

    With ``lazy`` only ``rowids`` is read now; every other array is a
    :class:`LazyArray` whose bytes are read on first use, so a mode the server ranks
    never downloads its arrays (a base at 1M chunks holds hundreds of MB of them).
    """
    expr = f'kind == "blob" and hkey == {mc.hash63(group)}'
    fields = ["id", "key", "num", "info"] + ([] if lazy else ["data"])
    with mc.reaching(store.address, store):
        rows = mc.query_all(client_of(store), store.address.meta, expr, fields)
    pieces: dict[str, list[dict]] = {}
    for row in rows:
        if row["key"].startswith(group + "/"):
            pieces.setdefault(row["key"][len(group) + 1 :], []).append(row)
    if "rowids" not in pieces:
        raise IndexCorruptError(
            f"index {store.uri} lacks the arrays of {group}: run "
            f"`ctxselect verify --index {store.uri}` and rebuild the index"
        )
    out: dict[str, Any] = {}
    for name, found in pieces.items():
        found.sort(key=lambda r: r["num"])
        array = LazyArray(store, json.loads(found[0]["info"]), [int(r["id"]) for r in found])
        if not lazy:
            out[name] = array.load(found)
        else:
            out[name] = array.load() if name == "rowids" else array
    return out


class LazyArray:
    """An array stored in pieces, read from the server when first asked for.

    Args:
        store: The MilvusStore.
        info: Its dtype and shape.
        ids: The row ids of its pieces, in order.
    """

    def __init__(self, store: Any, info: dict[str, Any], ids: list[int]) -> None:
        self.store, self.info, self.ids = store, info, ids
        self.shape = tuple(int(n) for n in info["shape"])
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()

    def load(self, rows: list[dict] | None = None) -> np.ndarray:
        """Return the array (its pieces read once; ``rows`` when already fetched)."""
        with self._lock:
            if self._array is None:
                if rows is None:
                    rows = self._pieces()
                self._array = mc.join_array(self.info, [r["data"] for r in rows])
            return self._array

    def _pieces(self) -> list[dict]:
        """The rows of the array's pieces, in order (read when a search first needs them,
        maybe long after the snapshot: a gone server is the store's one-line error)."""
        rows: list[dict] = []
        with mc.reaching(self.store.address, self.store):
            for part in mc.batches(self.ids, _PIECES):
                expr = f"id in {mc.ints(part)}"
                rows += mc.query_all(
                    client_of(self.store), self.store.address.meta, expr, ["num", "data"]
                )
        return sorted(rows, key=lambda r: r["num"])


_PIECES = 128  # pieces per query: at most 128 x 64,000 characters in one answer


class LazyArrays(Mapping[str, np.ndarray]):
    """One mode's arrays of a group (``Segments.base``), each loaded on first access."""

    def __init__(self, arrays: Mapping[str, LazyArray | np.ndarray]) -> None:
        self._arrays = dict(arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        found = self._arrays[name]
        return found.load() if isinstance(found, LazyArray) else found

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def shape(self, name: str) -> tuple[int, ...] | None:
        """The shape of array ``name`` without reading it (None when absent)."""
        found = self._arrays.get(name)
        return None if found is None else tuple(found.shape)


def read_json(store: Any, group: str) -> Any:
    """A JSON value stored in pieces under ``group``."""
    expr = f'kind == "blob" and hkey == {mc.hash63(group)}'
    with mc.reaching(store.address, store):
        rows = mc.query_all(client_of(store), store.address.meta, expr, ["key", "num", "data"])
    rows = sorted((r for r in rows if r["key"] == group), key=lambda r: r["num"])
    return json.loads("".join(r["data"] for r in rows)) if rows else {}


def _by_mode(arrays: Mapping[str, Any]) -> dict[str, LazyArrays]:
    out: dict[str, dict[str, Any]] = {}
    for key, array in arrays.items():
        mode, _, name = key.partition("/")
        out.setdefault(mode, {})[name] = array
    return {mode: LazyArrays(named) for mode, named in out.items()}

"""What a snapshot reads from SQLite besides the base file: delta segments and deletions,
each compared with its checksum in the manifest before it is used (see ``integrity``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ctxselect.errors import IndexCorruptError
from ctxselect.stores.embedded import integrity

if TYPE_CHECKING:
    from ctxselect.stores.embedded.handle import StoreHandle

DeltaArrays = list[dict[str, dict[str, np.ndarray]]]


def unblob(dtype: str, shape: str, data: bytes) -> np.ndarray:
    """Turn a BLOB row (dtype, shape as JSON, bytes) back into an array."""
    return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))


def read_deltas(
    store: StoreHandle, manifest: Mapping[str, Any]
) -> tuple[DeltaArrays, list[np.ndarray]]:
    """Return each listed delta segment's arrays per mode, and its row ids.

    Raises:
        IndexCorruptError: A segment is missing or does not match its checksum.
    """
    deltas: DeltaArrays = []
    rowids: list[np.ndarray] = []
    segs = manifest.get("segments", [])
    for seg in segs:
        per_mode: dict[str, dict[str, np.ndarray]] = {}
        found = store._conn.execute(
            "SELECT name, dtype, shape, data FROM deltas WHERE seg = ?", (seg,)
        ).fetchall()
        if store.checksums:  # before the bytes are interpreted
            crc = {"deltas": {str(seg): integrity.delta_crc(found)}}
            integrity.check_tables(store.folder, manifest, crc, str(store.path))
        for name, dtype, shape, data in found:
            if name == "rowids":
                rowids.append(unblob(dtype, shape, data))
                continue
            mode, _, array = name.partition("/")
            per_mode.setdefault(mode, {})[array] = unblob(dtype, shape, data)
        deltas.append(per_mode)
    if len(rowids) != len(segs):
        raise IndexCorruptError(
            f"index {store.folder} lists delta segments it does not hold: run "
            f"`ctxselect verify --index {store.folder}` and rebuild the index"
        )
    return deltas, rowids


def read_dead(
    store: StoreHandle, manifest: Mapping[str, Any]
) -> tuple[np.ndarray, dict[str, dict[str, int]]]:
    """Return the deleted row ids and, per mode, the deleted chunks' term counts.

    Raises:
        IndexCorruptError: Either table does not match its checksum.
    """
    dead = [i for (i,) in store._conn.execute("SELECT id FROM dead_rows")]
    found = store._conn.execute("SELECT mode, term, count FROM dead_terms").fetchall()
    if store.checksums:
        checksums = {
            "dead_rows": integrity.dead_rows_crc(dead),
            "dead_terms": integrity.dead_terms_crc(found),
        }
        integrity.check_tables(store.folder, manifest, checksums, str(store.path))
    dead_terms: dict[str, dict[str, int]] = {}
    for mode, term, count in found:
        dead_terms.setdefault(mode, {})[term] = count
    return np.asarray(dead, dtype=np.int64), dead_terms


def check_structure(
    store: StoreHandle, base: Mapping[str, Any], arrays: Mapping[str, Any], deltas: DeltaArrays
) -> None:
    """Check the arrays' structure when the base file has no checksum (an older index), so
    damage is an error rather than a crash or a wrong result.

    Raises:
        IndexCorruptError: An array is inconsistent.
    """
    if "crc32" in base:
        return
    from ctxselect.stores.embedded.verify import array_problems

    problems = array_problems(arrays, deltas)
    if problems:
        raise integrity.damaged(store.folder, store.folder / str(base["file"]), problems[0])

"""What Milvus can rank as ctxselect does: checks on an index's BM25 settings, its chunk
vectors and its fusion that decide which modes ``serving`` answers on the server."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ctxselect.config import FuseSpec
from ctxselect.manifest import Manifest
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus.snapshots import LazyArrays

RRF_K_MAX = 16384  # Milvus 2.5 takes RRF k in (0, 16384)


def plain_rrf(fusion: FuseSpec) -> bool:
    """Whether Milvus's ``RRFRanker`` computes ``fusion`` (equal weights, a whole k)."""
    return (
        fusion.method == "rrf"
        and fusion.weight == 0.5
        and float(fusion.k).is_integer()
        and 0 < fusion.k < RRF_K_MAX
    )


def has_vectors(store: Any, snapshot: Snapshot) -> bool:
    """True when the vector collection of the snapshot's dimension exists."""
    shape = vectors_shape(snapshot)
    if shape is None:
        return False
    return bool(store._client.has_collection(mc.dense_name(store.address, shape[1])))


def vectors_shape(snapshot: Snapshot) -> tuple[int, ...] | None:
    """The shape of the base's chunk vectors (rows, dimensions), read without the vectors
    (a served mode never downloads them); None without 2-d vectors."""
    base = snapshot.segments["dense"].base
    if isinstance(base, LazyArrays):
        shape = base.shape("vectors")
    else:
        shape = tuple(base["vectors"].shape) if "vectors" in base else None
    return shape if shape is not None and len(shape) == 2 else None


def same_bm25(collection: Mapping[str, Any] | None, manifest: Mapping[str, Any]) -> bool:
    """Whether the index's BM25 settings are the collection's: k1, b, stems and stop words
    as the collection was made, and every setting it does not record (a newer analysis
    option, such as identifier splitting) off, since Milvus's analyzer applies none."""
    if not collection:
        return False
    ours = dataclasses.asdict(Manifest.from_dict(manifest).bm25)
    return all(ours[k] == v for k, v in collection.items() if k in ours) and not any(
        v for k, v in ours.items() if k not in collection
    )

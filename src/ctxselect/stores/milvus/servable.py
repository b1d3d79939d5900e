"""What Milvus can rank as ctxselect does: checks on an index's BM25 settings, its chunk
vectors and its fusion that decide which modes ``serving`` answers on the server, and
the guards of a served search (a damaged index, an unreachable server)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from ctxselect.config import FuseSpec
from ctxselect.errors import IndexCorruptError
from ctxselect.manifest import Manifest
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus.calls import client_of
from ctxselect.stores.milvus.snapshots import LazyArrays

P = ParamSpec("P")
R = TypeVar("R")
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
    """True when the index has a vector collection of the snapshot's dimension."""
    shape = vectors_shape(snapshot)
    if shape is None:
        return False
    return bool(store.owns_dense(ms.dense_name(store.address, shape[1])))


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


def check_rows(store: Any, snapshot: Snapshot, expr: str) -> None:
    """Refuse to answer "no match" from an index whose chunk rows are gone (one query,
    made only when a search found nothing): the manifest counts live chunks, and no row
    of the chunk collection matches ``expr`` (the generation's live rows).

    Raises:
        IndexCorruptError: The generation counts chunks but none of its rows exist.
    """
    counted = int((snapshot.manifest.get("counts") or {}).get("chunks", 0))
    name, uri = store.address.name, store.uri
    if not counted or store._client.query(name, filter=expr, output_fields=["id"], limit=1):
        return
    raise IndexCorruptError(
        f"index {uri} is damaged: its generation {snapshot.generation} counts {counted} "
        f"chunks but collection {name!r} holds none of them (deleted by something other "
        f"than this index's commits): check it with `ctxselect verify --index {uri}` and "
        f"rebuild with `ctxselect index PATH... --index {uri}`"
    )


def searching(method: Callable[P, R]) -> Callable[P, R]:
    """Turn the client's failures of a search into one-line errors naming the URI."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        searcher: Any = args[0]
        client_of(searcher.store)  # a closed store says so, not AttributeError
        with mc.reaching(searcher.store.address, searcher.store):
            return method(*args, **kwargs)

    return wrapper

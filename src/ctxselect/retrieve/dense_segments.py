"""Dense vectors in a stored index: the segment arrays, their compaction, and loading.

A dense base segment holds ``vectors`` (float32, one row per chunk, zero rows for blank
chunks), ``embedded`` (uint8 mask), ``model`` (the model id, UTF-8) and, from the
index's ANN threshold on, ``ann`` (the HNSW graph's bytes); a delta segment holds
``vectors`` and ``embedded`` of the rows an update added. Compaction moves vectors to
their new rows and rebuilds the graph; nothing is embedded again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ctxselect.config import DEFAULT_ANN_THRESHOLD
from ctxselect.errors import IndexCorruptError
from ctxselect.retrieve._ann import HnswIndex
from ctxselect.retrieve.dense import (
    REBUILD,
    DenseRetriever,
    Encoder,
    check_model,
    encode_text,
    graph_of,
)
from ctxselect.retrieve.dense_scores import StackedVectors
from ctxselect.types import Rows, Segments


def raw_vectors(vectors: np.ndarray, embedded: np.ndarray) -> dict[str, np.ndarray]:
    """A dense delta segment: float32 vectors (zero rows where not embedded) and the mask."""
    mask = np.asarray(embedded, dtype=bool)
    clean = np.where(mask[:, None], np.asarray(vectors, dtype=np.float32), 0.0)
    return {"vectors": clean.astype(np.float32), "embedded": mask.astype(np.uint8)}


def base_arrays(
    raw: Mapping[str, np.ndarray], model_id: str, ann_threshold: int = DEFAULT_ANN_THRESHOLD
) -> dict[str, np.ndarray]:
    """A dense base segment from the raw vectors of every live row (chunk_id order):
    the vectors, the mask, the model id and, from ``ann_threshold`` embedded rows on,
    the HNSW graph."""
    vectors = np.ascontiguousarray(raw["vectors"], dtype=np.float32)
    embedded = np.asarray(raw["embedded"], dtype=bool)
    out: dict[str, np.ndarray] = {
        "vectors": vectors,
        "embedded": embedded.astype(np.uint8),
        "model": encode_text(model_id),
    }
    graph = graph_of(vectors, embedded, ann_threshold)
    if graph is not None:
        out["ann"] = graph.to_array()
    return out


def compact_vectors(
    base: Mapping[str, np.ndarray],
    deltas: Sequence[Mapping[str, np.ndarray]],
    mapping: np.ndarray,
    n_live: int,
) -> dict[str, np.ndarray]:
    """Move every live row's vector to its row after compaction (nothing is re-embedded).

    Args:
        base: The base segment's arrays.
        deltas: Each delta segment's raw vectors, in row order.
        mapping: New row of each global row, -1 for dead rows (``index.merge.new_rows``).
        n_live: Rows after compaction.
    """
    dim = int(np.shape(base["vectors"])[1])
    vectors = np.zeros((n_live, dim), dtype=np.float32)
    embedded = np.zeros(n_live, dtype=np.uint8)
    offset = 0
    for seg in (base, *deltas):
        n = len(seg["embedded"])
        target = mapping[offset : offset + n]
        alive = np.flatnonzero(target >= 0)
        vectors[target[alive]] = np.asarray(seg["vectors"])[alive]
        embedded[target[alive]] = np.asarray(seg["embedded"])[alive]
        offset += n
    return {"vectors": vectors, "embedded": embedded}


def merge_vectors(deltas: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate dense delta segments into one (rows in order, dead rows kept)."""
    return {
        "vectors": np.concatenate([np.asarray(d["vectors"], dtype=np.float32) for d in deltas]),
        "embedded": np.concatenate([np.asarray(d["embedded"], dtype=np.uint8) for d in deltas]),
    }


def load_segments(rows: Rows, segments: Segments, embedder: Encoder) -> DenseRetriever:
    """Load dense retrieval over ``rows`` from a stored base segment and its changes.

    A compacted index loads as :meth:`DenseRetriever.load`. Otherwise the base's vectors
    stay memory-mapped beside the deltas', deleted rows are masked (and left out of the
    graph), and rows added since the graph was built are searched exactly.

    Raises:
        IndexMismatchError: The index was embedded with another model than ``embedder``.
        IndexCorruptError: The segments do not fit each other or ``rows``.
    """
    base = segments.base
    if segments.compacted:
        return DenseRetriever.load(rows, base, embedder)
    check_model(base, embedder)
    parts = [base["vectors"], *(d["vectors"] for d in segments.deltas)]
    flags = [base["embedded"], *(d["embedded"] for d in segments.deltas)]
    embedded = np.concatenate([np.asarray(f, dtype=bool) for f in flags])
    if len(embedded) != len(rows) or any(np.shape(p)[1:] != (embedder.dim,) for p in parts):
        raise IndexCorruptError(
            f"the dense segments cover {len(embedded)} rows of {embedder.dim} dimensions "
            f"but the index has {len(rows)} rows: rebuild it with `{REBUILD}`"
        )
    n_base = len(base["embedded"])
    dead = np.asarray(segments.dead if segments.dead is not None else [], dtype=np.int64)
    ann = HnswIndex.load(base["ann"], embedder.dim) if "ann" in base else None
    if ann is not None:
        gone = dead[dead < n_base]
        ann.delete(gone[embedded[gone]])  # blank rows were never in the graph
    embedded[dead] = False
    return DenseRetriever(rows, embedder, StackedVectors(parts), embedded, ann, n_base)

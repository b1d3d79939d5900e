"""Merge segments without re-analyzing text: compaction and delta consolidation.

Compaction turns a base segment, its deltas and the dead rows into the raw postings a
full rebuild of the live chunks would produce, bit for bit: rows renumbered in chunk_id
order, vocabulary sorted, terms no live row holds dropped, ``(term, row)`` postings in
order. The base's postings are already in that order (its live rows keep their relative
order), so only the deltas' postings are sorted, then inserted by binary search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

RawArrays = Mapping[str, np.ndarray]


def decode_vocab(blob: np.ndarray) -> list[str]:
    """Terms from their stored form: UTF-8 joined by newlines (as retrieve/_sparse writes)."""
    text = np.asarray(blob, dtype=np.uint8).tobytes().decode("utf-8")
    return text.split("\n") if text else []


def encode_vocab(vocab: Sequence[str]) -> np.ndarray:
    """Invert :func:`decode_vocab`."""
    return np.frombuffer("\n".join(vocab).encode("utf-8"), dtype=np.uint8).copy()


def _expand(
    raw: RawArrays, term_map: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (union term id, local row, tf) of every posting of one segment."""
    vocab = decode_vocab(raw["vocab"])
    ids = np.fromiter((term_map[t] for t in vocab), dtype=np.int64, count=len(vocab))
    counts = np.diff(np.asarray(raw["indptr"], dtype=np.int64)).astype(np.int64)
    return (
        np.repeat(ids, counts),
        np.asarray(raw["rows"], dtype=np.int64),
        np.asarray(raw["tfs"]),  # as stored (uint8 mostly): no int32 copy of the base's
    )


def narrow_counts(tfs: np.ndarray) -> np.ndarray:
    """Term counts as uint8, uint16 or int32, the first that holds them (as retrieve/_sparse)."""
    top = int(tfs.max()) if len(tfs) else 0
    return np.asarray(
        tfs, dtype=np.uint8 if top <= 0xFF else np.uint16 if top <= 0xFFFF else np.int32
    )


def _union(segments: Sequence[RawArrays]) -> tuple[list[str], dict[str, int]]:
    terms: set[str] = set()
    for raw in segments:
        terms.update(decode_vocab(raw["vocab"]))
    vocab = sorted(terms)
    return vocab, {t: i for i, t in enumerate(vocab)}


def _csc(
    vocab: list[str], keys: np.ndarray, tfs: np.ndarray, lengths: np.ndarray, stride: int
) -> dict[str, np.ndarray]:
    """Raw arrays from sorted ``term * stride + row`` keys; terms without postings dropped."""
    terms = keys // stride
    counts = np.bincount(terms, minlength=len(vocab))
    present = counts > 0
    indptr = np.zeros(int(present.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[present], out=indptr[1:])
    return {
        "vocab": encode_vocab([t for t, keep in zip(vocab, present.tolist(), strict=True) if keep]),
        "indptr": indptr,
        "rows": (keys - terms * stride).astype(np.int32),
        "tfs": narrow_counts(tfs),
        "lengths": lengths.astype(np.int32),
    }


def new_rows(rowids: np.ndarray, dead: np.ndarray | None, live_order: np.ndarray) -> np.ndarray:
    """Map each global row to its row after compaction (chunk_id order), or -1 if dead.

    Raises:
        ValueError: The live rows and the store's live chunks differ (a damaged index).
    """
    sorter = np.argsort(live_order, kind="stable")
    ordered = live_order[sorter]
    pos = np.searchsorted(ordered, rowids)
    pos = np.minimum(pos, max(len(ordered) - 1, 0))
    found = ordered[pos] == rowids if len(ordered) else np.zeros(len(rowids), dtype=bool)
    out = np.where(found, sorter[pos] if len(ordered) else 0, -1).astype(np.int64)
    is_dead = np.zeros(len(rowids), dtype=bool)
    if dead is not None and len(dead):
        is_dead[dead] = True
    out[is_dead] = -1
    orphans = bool((~found & ~is_dead).any())
    if orphans or len(np.unique(out[out >= 0])) != len(live_order):
        raise ValueError("the segments' live rows do not match the live chunks")
    return out


def compact(
    base: RawArrays, deltas: Sequence[RawArrays], mapping: np.ndarray, n_live: int
) -> dict[str, np.ndarray]:
    """Merge a base and its deltas into the raw postings of the live rows.

    Args:
        base: The base segment's arrays (raw postings are a subset of them).
        deltas: Each delta segment's raw postings, in row order.
        mapping: :func:`new_rows` of every global row.
        n_live: Rows after compaction.
    """
    vocab, term_map = _union([base, *deltas])
    stride = max(n_live, 1)
    lengths = np.zeros(n_live, dtype=np.int32)
    offset = 0
    pieces = []
    for raw in (base, *deltas):
        terms, rows, tfs = _expand(raw, term_map)
        seg_lengths = np.asarray(raw["lengths"], dtype=np.int32)
        seg_map = mapping[offset : offset + len(seg_lengths)]
        alive = seg_map >= 0
        lengths[seg_map[alive]] = seg_lengths[alive]
        target = seg_map[rows]
        keep = target >= 0
        pieces.append((terms[keep] * stride + target[keep], tfs[keep]))
        offset += len(seg_lengths)
    base_keys, base_tfs = pieces[0]  # sorted: see the module docstring
    if len(pieces) > 1:
        d_keys = np.concatenate([k for k, _ in pieces[1:]])
        d_tfs = np.concatenate([t for _, t in pieces[1:]])
        order = np.argsort(d_keys, kind="stable")
        d_keys, d_tfs = d_keys[order], d_tfs[order]
        at = np.searchsorted(base_keys, d_keys)
        base_keys = np.insert(base_keys, at, d_keys)
        wide = np.promote_types(base_tfs.dtype, d_tfs.dtype)  # a delta may count higher
        base_tfs = np.insert(base_tfs.astype(wide, copy=False), at, d_tfs)
    return _csc(vocab, base_keys, base_tfs, lengths, stride)


def merge_deltas(deltas: Sequence[RawArrays]) -> dict[str, np.ndarray]:
    """Concatenate delta segments into one (rows in order, dead rows kept)."""
    vocab, term_map = _union(deltas)
    n = sum(len(d["lengths"]) for d in deltas)
    stride = max(n, 1)
    keys, tfs, offset = [], [], 0
    for raw in deltas:
        terms, rows, seg_tfs = _expand(raw, term_map)
        keys.append(terms * stride + rows + offset)
        tfs.append(seg_tfs)
        offset += len(raw["lengths"])
    all_keys = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    order = np.argsort(all_keys, kind="stable")
    all_tfs = np.concatenate(tfs)[order] if tfs else np.zeros(0, np.int32)
    lengths = np.concatenate([np.asarray(d["lengths"], dtype=np.int32) for d in deltas])
    return _csc(vocab, all_keys[order], all_tfs, lengths, stride)

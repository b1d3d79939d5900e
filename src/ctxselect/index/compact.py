"""When and how segments are merged: automatic compaction and delta consolidation.

Compaction costs a pass over the base's postings (no text is re-analyzed), so it runs
when the changes since the last one pass a share of the index (``fraction`` of live
chunks, default 10%); between compactions, deltas are consolidated into one when there
are more than ``MAX_DELTA_SEGMENTS`` (each search reads every delta). Both are amortised:
a single-document update of a large index only writes its own delta.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ctxselect.config import MAX_DELTA_SEGMENTS
from ctxselect.index.merge import new_rows
from ctxselect.index.writer import ModeOps
from ctxselect.manifest import Manifest
from ctxselect.stores.base import Store


def pending_rows(manifest: Manifest) -> int:
    """Delta rows plus deleted rows since the last compaction."""
    return manifest.state.delta_rows + manifest.state.dead_rows


def needs_compaction(manifest: Manifest, fraction: float | None) -> bool:
    """True when pending rows pass ``fraction`` of the live chunks (None: never)."""
    if fraction is None:
        return False
    live = manifest.state.counts.get("chunks", 0)
    pending = pending_rows(manifest)
    return pending > 0 and pending > fraction * live


def needs_delta_merge(manifest: Manifest) -> bool:
    """True when there are more delta segments than a search should read one by one."""
    return len(manifest.state.segments) > MAX_DELTA_SEGMENTS


def compact_store(
    store: Store, modes: Mapping[str, ModeOps], manifest: Mapping[str, Any]
) -> tuple[int, int, int]:
    """Merge base, deltas and deletions into one new base; commit it.

    Returns:
        (rows after, delta segments merged, dead rows dropped).
    """
    snap = store.snapshot(eager=False)
    live_order = store.live_order()
    names = [m for m in modes if m in snap.segments]
    if not names:
        return len(live_order), 0, 0
    first = snap.segments[names[0]]
    mapping = new_rows(snap.rowids, first.dead, live_order)
    done: dict[str, dict[str, np.ndarray]] = {}
    arrays = {}
    for mode in names:
        seg, ops = snap.segments[mode], modes[mode]
        if ops.analysis not in done:
            done[ops.analysis] = dict(ops.compact(seg.base, seg.deltas, mapping, len(live_order)))
        arrays[mode] = ops.finish(done[ops.analysis])
    dropped = 0 if first.dead is None else len(first.dead)
    store.commit_base(
        arrays=arrays,
        rowids=live_order,
        expected_generation=snap.generation,
        manifest={**manifest, "pending": {"delta_rows": 0, "dead_rows": 0}},
    )
    return len(live_order), len(first.deltas), dropped


def merge_store_deltas(store: Store, modes: Mapping[str, ModeOps]) -> int:
    """Consolidate every delta segment into one; return how many were merged."""
    snap = store.snapshot(eager=False)
    names = [m for m in modes if m in snap.segments]
    if not names or len(snap.segments[names[0]].deltas) < 2:
        return 0
    n_base = Manifest.from_dict(snap.manifest, index=store.uri).state.base_rows or 0
    done: dict[str, dict[str, np.ndarray]] = {}
    arrays = {}
    for mode in names:
        ops = modes[mode]
        if ops.analysis not in done:
            done[ops.analysis] = dict(ops.merge(snap.segments[mode].deltas))
        arrays[mode] = done[ops.analysis]
    store.commit_deltas(
        arrays=arrays, rowids=snap.rowids[n_base:], expected_generation=snap.generation
    )
    return len(snap.segments[names[0]].deltas)

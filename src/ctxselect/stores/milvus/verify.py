"""``verify`` of a Milvus index: the committed generation read back and cross-checked."""

from __future__ import annotations

from typing import Any

import numpy as np

from ctxselect.errors import CtxselectError, StoreUnreachableError
from ctxselect.stores.milvus.lease import live


def verify_store(store: Any) -> tuple[list[str], list[str], list[str]]:
    """Return (checks run, problems found, leftovers removed) of a MilvusStore.

    Leftovers (rows of a generation that never got its head row) are removed only when
    no other writer holds an unexpired lease.
    """
    checks, problems, removed = ["layout", "manifest"], list[str](), list[str]()
    generation = store.head()
    try:
        manifest = store.manifest_at(generation)
    except StoreUnreachableError:  # not damage: the server did not answer
        raise
    except CtxselectError as exc:
        return checks, [str(exc)], removed
    with store.reading():
        if isinstance(manifest.get("base"), dict):
            checks.append("arrays")
            problems += _arrays(store, manifest)
        checks.append("counts")
        problems += _counts(store, manifest)
    checks.append("leftovers")
    lease = store.lease_row()
    if not live(lease) or (lease is not None and lease["key"] in store._held):
        n = store.remove_leftovers(generation)
        if n:
            removed.append(f"{n} rows of an interrupted write (after generation {generation})")
    return checks, problems, removed


def _arrays(store: Any, manifest: dict[str, Any]) -> list[str]:
    try:
        snap = store.snapshot(eager=True)
    except StoreUnreachableError:  # not damage: the server did not answer
        raise
    except CtxselectError as exc:
        return [str(exc)]
    problems = []
    base_rows = int(manifest["base"]["rows"])
    live = set(store.live_order().tolist())
    dead = set() if not snap.segments else _dead(snap)
    in_rows = {int(r) for i, r in enumerate(snap.rowids.tolist()) if i not in dead}
    if live != in_rows:
        problems.append(
            f"the segments name {len(in_rows)} live rows but {len(live)} chunks are live "
            f"(rebuild the index with `ctxselect index PATH... --index {store.uri}`)"
        )
    for mode, segments in snap.segments.items():
        sizes = {len(a) for a in segments.base.values() if a.ndim == 1}
        if base_rows and not sizes:
            problems.append(f"mode {mode}'s base holds no arrays")
    return problems


def _dead(snap: Any) -> set[int]:
    first = next(iter(snap.segments.values()))
    return set() if first.dead is None else set(np.asarray(first.dead).tolist())


def _counts(store: Any, manifest: dict[str, Any]) -> list[str]:
    counts = manifest.get("counts") or {}
    table = store.chunk_table()
    docs = store.doc_hashes()
    found = {"documents": len(docs), "chunks": len(table), "tokens": sum(table.n_tokens)}
    problems = [
        f"the manifest counts {int(counts.get(k, 0))} {k} but the index holds {n}"
        for k, n in found.items()
        if int(counts.get(k, 0)) != n
    ]
    orphans = sorted(set(table.doc_ids) - set(docs))
    if orphans:
        problems.append(f"chunks of unknown documents: {', '.join(orphans[:5])}")
    return problems

"""Maintenance of an index: ``compact_index`` merges its segments into one base, and
``verify_index`` checks its integrity (and removes what an interrupted write left)."""

from __future__ import annotations

import time

from ctxselect.api import modes as _modes
from ctxselect.api import sync as _sync
from ctxselect.api import write_session as _session
from ctxselect.api.write import PathArg
from ctxselect.config import resolve_index_dir
from ctxselect.errors import CtxselectError, IndexNotFoundError, StoreUnreachableError
from ctxselect.index import compact as _compact
from ctxselect.stores import Store, open_store
from ctxselect.types import CompactReport, VerifyReport


def _open(index: PathArg | None) -> Store:
    return open_store(resolve_index_dir(index))


def compact_index(index: PathArg | None = None, *, wait: float = 0.0) -> CompactReport:
    """Merge every segment into one base: searches then equal a full rebuild exactly."""
    started = time.perf_counter()
    with _session.writing(index, wait, create=False) as store:
        manifest = _sync.read_manifest(store)
        modes = _modes.stored_mode_ops(store, manifest)
        if manifest.state.base_rows is None:
            raise IndexNotFoundError(f"index {store.uri} holds nothing to compact yet")
        store.check_base()  # never report a damaged index as compact
        if not manifest.state.segments and not _compact.pending_rows(manifest):
            n = store.counts()["chunks"]
            return CompactReport(store.uri, n, 0, 0, 0.0, note="already compact")
        rows, merged, dropped = _sync.compact(store, modes)
        seconds = round(time.perf_counter() - started, 3)
        return CompactReport(store.uri, rows, merged, dropped, seconds)


def verify_index(index: PathArg | None = None) -> VerifyReport:
    """Check an index's integrity; ``ok`` is False (with one line per problem) on damage.

    Leftover files of an interrupted write are removed when no writer is running.
    """
    folder = resolve_index_dir(index)
    try:
        store = _open(folder)
    except (IndexNotFoundError, StoreUnreachableError):
        raise  # nothing to judge: a server that does not answer is not a damaged index
    except CtxselectError as exc:
        return VerifyReport(folder, False, ("open",), (str(exc),))
    try:
        checks, problems, removed = store.verify()
        return VerifyReport(folder, not problems, tuple(checks), tuple(problems), tuple(removed))
    finally:
        store.close()


__all__ = ["compact_index", "verify_index"]

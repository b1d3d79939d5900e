"""Keep an index current while files change: poll, then re-index what changed.

Polling file sizes and modification times needs no platform file-event API and works on
every file system; each run is an ordinary :func:`~ctxselect.api.write.index_paths`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxselect.api.write import PathArg, index_paths
from ctxselect.config import DEFAULT_WATCH_INTERVAL, WATCH_INTERVAL, resolve_index_dir
from ctxselect.errors import IndexNotFoundError
from ctxselect.index.watch import fingerprint
from ctxselect.manifest import Manifest
from ctxselect.stores import open_store
from ctxselect.stores.open import split_uri
from ctxselect.types import IndexReport


def _roots_of(folder: str) -> list[str]:
    """The roots the index at ``folder`` was built from (none while it does not exist)."""
    try:
        store = open_store(folder)
    except IndexNotFoundError:
        return []
    try:
        return list(Manifest.from_dict(store.read_manifest(), index=folder).roots)
    finally:
        store.close()


def _index_location(index: str) -> tuple[str, str]:
    """(the index as the store opens it, the folder the scan skips: "" for none).

    A folder becomes absolute, so a change of working directory cannot move it, and
    the scan leaves it out (every run changes it). A remote index (``milvus://...``) is
    a URI, not a path: it is kept as given and no folder is skipped.
    """
    scheme, location = split_uri(index)
    if scheme != "file":
        return index, ""
    folder = os.path.abspath(location)
    return folder, folder


@contextlib.contextmanager
def _stop_on_ctrl_c() -> Iterator[threading.Event]:
    """Turn the first Ctrl-C into a stop flag the watch loop checks between index runs.

    A KeyboardInterrupt raised at an arbitrary point could land inside the store's own
    locking; a flag lets the current run finish and the loop end cleanly. A second
    Ctrl-C raises as usual. Outside the main thread no handler can be installed, and
    the flag is only set by the caller.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)

    def handle(signum: int, frame: object) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, handle)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def watch_paths(
    paths: Sequence[PathArg] = (),
    index: PathArg | None = None,
    *,
    interval: float = DEFAULT_WATCH_INTERVAL,
    on_report: Callable[[IndexReport], object] | None = None,
    max_runs: int | None = None,
    **options: Any,
) -> int:
    """Keep an index current: index now, then re-index whenever files under the roots change.

    Polls the roots' file sizes and modification times every ``interval`` seconds (no
    platform file-event API needed) and runs :func:`index_paths` on a change. Ends on
    Ctrl-C (KeyboardInterrupt) or after ``max_runs`` index runs; returns the runs made.
    Options are those of :func:`index_paths`.
    """
    WATCH_INTERVAL.check(interval)  # NaN or inf would spin or never scan again
    folder, skip = _index_location(resolve_index_dir(index))
    runs = 0
    with _stop_on_ctrl_c() as stop:
        try:
            roots = [str(Path(p).resolve()) for p in paths] or _roots_of(folder)
            seen = fingerprint(roots, skip)
            report = index_paths(paths, folder, **options)
            runs += 1
            if on_report is not None:
                on_report(report)
            roots = _roots_of(folder)
            while (max_runs is None or runs < max_runs) and not stop.wait(interval):
                now = fingerprint(roots, skip)
                if now == seen:
                    continue
                seen = now  # taken before the run: a change during it triggers another
                report = index_paths([], folder, **options)
                runs += 1
                if on_report is not None:
                    on_report(report)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: any write in progress rolled back or committed whole
    return runs


__all__ = ["watch_paths"]

"""Keep an index current while files change: poll, then re-index what changed.

Polling file sizes and modification times needs no platform file-event API and works on
every file system; each run is an ordinary :func:`~ctxselect.api.write.index_paths`.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxselect.api.write import PathArg, index_paths
from ctxselect.api.write_inputs import existing_roots, path_list
from ctxselect.api.write_inputs import index_location as _index_location  # shared with write
from ctxselect.config import DEFAULT_WATCH_INTERVAL, WATCH_INTERVAL
from ctxselect.errors import (
    ConfigError,
    CtxselectError,
    IndexLockedError,
    IndexNotFoundError,
    InputError,
    StoreUnreachableError,
)
from ctxselect.index.watch import Fingerprint, fingerprint
from ctxselect.manifest import Manifest
from ctxselect.stores import open_store
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


# A run that fails with one of these leaves the index as it was and may pass: another
# writer holds the lock, a root is briefly gone (InputError), a server does not answer.
# The watcher reports it and tries again; any other error (bad settings, damage) ends it.
# The first run knows no root yet that could come back: a path it cannot read is a typo.
FIRST_PASSING_ERRORS: tuple[type[CtxselectError], ...] = (IndexLockedError, StoreUnreachableError)
PASSING_ERRORS: tuple[type[CtxselectError], ...] = (*FIRST_PASSING_ERRORS, InputError)


def _say_on_stderr(error: CtxselectError) -> None:
    print(f"index run failed, watching on: {error}", file=sys.stderr, flush=True)


def check_max_runs(max_runs: object) -> int | None:
    """Return ``max_runs`` if it is None (no limit) or a whole number >= 1, else raise.

    Raises:
        ConfigError: ``max_runs`` is 0, negative, a float, a str or a bool.
    """
    if max_runs is None:
        return None
    if isinstance(max_runs, bool) or not isinstance(max_runs, numbers.Integral) or max_runs < 1:
        raise ConfigError(
            f"max_runs must be a whole number of index runs >= 1 (or None), got "
            f"{max_runs!r}: the first run always happens, so pass 1 for one run, or "
            f"None to watch until Ctrl-C"
        )
    return int(max_runs)


class _Runner:
    """Counts the index runs of one watch, and reports each run's result or passing error."""

    def __init__(
        self,
        folder: str,
        options: dict[str, Any],
        on_report: Callable[[IndexReport], object] | None,
        on_error: Callable[[CtxselectError], object],
    ) -> None:
        self.folder, self.options = folder, options
        self.on_report, self.on_error = on_report, on_error
        self.runs = 0

    def run(
        self,
        paths: Sequence[PathArg],
        passing: tuple[type[CtxselectError], ...],
        recorded: bool = False,
    ) -> type[CtxselectError] | None:
        """Run one index run over ``paths``; return the class of a ``passing`` error
        (None: it succeeded). ``recorded`` paths are the index's own roots, read once for
        the run: each must still be there (else nothing changes, as a re-scan refuses)."""
        self.runs += 1
        try:
            if recorded:
                existing_roots([os.fspath(p) for p in paths], self.folder)
            report = index_paths(paths, self.folder, **self.options)
        except passing as exc:
            self.on_error(exc)
            return type(exc)
        if self.on_report is not None:
            self.on_report(report)
        return None


def watch_paths(
    paths: PathArg | Sequence[PathArg] | None = (),
    index: PathArg | None = None,
    *,
    interval: float = DEFAULT_WATCH_INTERVAL,
    on_report: Callable[[IndexReport], object] | None = None,
    on_error: Callable[[CtxselectError], object] | None = None,
    max_runs: int | None = None,
    **options: Any,
) -> int:
    """Keep an index current: index now, then re-index whenever files under the roots change.

    Polls the roots' file sizes and modification times every ``interval`` seconds (no
    platform file-event API needed) and runs :func:`index_paths` on a change. A run that
    fails in a way that may pass (:data:`PASSING_ERRORS`: another writer holds the lock,
    a root is briefly gone, the server does not answer) changes nothing; its error goes
    to ``on_error`` (default: one line on stderr) and the watch goes on: after a lock or
    server error the next interval runs again, after a missing root the next change
    does. Any other error (bad settings, a damaged index, on the first run a path that
    does not exist) ends the watch. Ends on Ctrl-C
    (KeyboardInterrupt) or after ``max_runs`` index runs (failed ones count); returns the
    runs made. Options are those of :func:`index_paths`.

    Raises:
        ConfigError: ``interval`` out of range, ``max_runs`` below 1, a path that is not
            a path, or an error of :func:`index_paths` that cannot pass.
    """
    WATCH_INTERVAL.check(interval)  # NaN or inf would spin or never scan again
    max_runs = check_max_runs(max_runs)
    asked = path_list(paths)  # one str is one path, not its letters
    folder, skip = _index_location(index)
    runner = _Runner(folder, options, on_report, on_error or _say_on_stderr)
    resolved = [str(Path(p).resolve()) for p in asked]
    with _stop_on_ctrl_c() as stop:
        try:
            # Each run reads the index's roots once and both re-scans and watches them:
            # another process may re-index with other roots at any time.
            roots = resolved or _roots_of(folder)
            seen: Fingerprint | None = fingerprint(roots, skip)
            failed = runner.run(asked or roots, FIRST_PASSING_ERRORS, recorded=not asked)
            while (max_runs is None or runner.runs < max_runs) and not stop.wait(interval):
                now = fingerprint(roots, skip)
                again = failed is not None and not issubclass(failed, InputError)
                if now == seen and not again:
                    continue  # unchanged, and only a change can mend a missing root
                recorded = _roots_of(folder)  # none yet if the first run failed
                if (recorded or resolved) != roots:  # re-indexed with other roots meanwhile
                    roots = recorded or resolved
                    now = fingerprint(roots, skip)
                seen = now  # taken before the run: a change during it triggers another
                failed = runner.run(roots, PASSING_ERRORS, recorded=bool(recorded))
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: any write in progress rolled back or committed whole
    return runner.runs


__all__ = ["PASSING_ERRORS", "check_max_runs", "watch_paths"]

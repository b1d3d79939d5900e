"""The Executor seam: run one picklable task over many items on worker processes.

Ingestion spreads its heavy steps (chunking, embedding) over workers through this seam:
``executor.map(task, items)`` yields ``task(item)`` for every item, in item order, while
the calling process stays the only one writing to the index. Two executors are
registered: ``local`` (a process pool on this machine) and ``ray`` (a Ray cluster, or a
local Ray instance bound to 127.0.0.1; ``ctxselect[ray]``). A task keeps per-worker state
(a loaded model) in a module global of its own module: a worker process runs many tasks,
so it loads that state once.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, TypeVar, runtime_checkable

from ctxselect.errors import ConfigError, WorkerError
from ctxselect.registry import Registry

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_EXECUTOR = "local"
START_METHOD = "spawn"
"""Workers start as fresh interpreters: forking a process that holds torch's threads (or
any lock another thread holds) can deadlock the child."""


@runtime_checkable
class Executor(Protocol):
    """Runs a task over items on ``workers`` worker processes.

    Attributes:
        name: The registry name (``local``, ``ray``); the same in Python and the CLI.
        workers: How many workers run tasks at once.
    """

    name: str
    workers: int

    def map(self, task: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Yield ``task(item)`` for each item, in the order of ``items``.

        ``task`` must be a module-level function (it is sent to the workers by reference),
        and items and results must pickle. A task's exception is raised here.
        """
        ...

    def close(self) -> None:
        """Stop the workers (an executor is reusable until closed)."""
        ...


EXECUTORS: Registry[Callable[..., Executor]] = Registry("executor")
"""executor name -> factory taking ``workers`` and ``address``."""


def check_workers(workers: object) -> int:
    """Return ``workers`` if it is a whole number >= 1.

    Raises:
        ConfigError: It is not.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(
            f"workers must be a whole number >= 1, got {workers!r}: use 1 to index in this "
            f"process, or the number of processes to spread chunking and embedding over"
        )
    return workers


@EXECUTORS.register("local")
class LocalExecutor:
    """A pool of ``workers`` processes on this machine (started on first use).

    Workers are spawned, not forked (see :data:`START_METHOD`); each lives until
    :meth:`close`, so state a task loads in a worker serves every later task.
    """

    name = "local"

    def __init__(self, workers: int = 2, address: str | None = None) -> None:
        """Configure the pool; ``address`` must be None (a local pool has none).

        Raises:
            ConfigError: ``workers`` < 1, or an address was given.
        """
        self.workers = check_workers(workers)
        if address is not None:
            raise ConfigError(
                f"an address ({address!r}) is for the ray executor: drop it, or add "
                f"--executor ray to run on that Ray cluster"
            )
        self._pool: ProcessPoolExecutor | None = None

    def map(self, task: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Yield ``task(item)`` for each item in order, running on the pool."""
        if self._pool is None:
            context = multiprocessing.get_context(START_METHOD)
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context)
        return _reporting(self._pool.map(task, items))

    def close(self) -> None:
        """Shut the pool down (pending tasks are cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _reporting(results: Iterator[R]) -> Iterator[R]:
    """Yield ``results``, turning a dead worker into an error that says what to check."""
    try:
        yield from results
    except BrokenProcessPool as exc:
        raise WorkerError(
            f"a worker process died ({exc}): it may have run out of memory, or a script "
            f"calling ctxselect with workers > 1 lacks `if __name__ == '__main__':` (workers "
            f"are spawned and import the script again); nothing was written"
        ) from exc


def make_executor(name: str, workers: int, *, address: str | None = None) -> Executor:
    """Make the executor registered as ``name`` with ``workers`` workers.

    Raises:
        UnknownNameError: ``name`` is not registered (the message lists the valid ones).
        ConfigError: ``workers`` < 1, or ``address`` given to an executor without one.
        MissingExtraError: The ray executor without ``ctxselect[ray]``.
    """
    check_workers(workers)
    factory: Any = EXECUTORS.get(name)
    executor: Executor = factory(workers, address)
    return executor


def executor_names() -> list[str]:
    """The registered executor names, for help texts and errors."""
    return EXECUTORS.names()


__all__ = [
    "DEFAULT_EXECUTOR",
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "check_workers",
    "executor_names",
    "make_executor",
]

"""The ``ray`` executor: tasks run on Ray actors, one per worker (``ctxselect[ray]``).

With an address (``ray://HOST:10001`` for Ray Client, ``HOST:6379`` or ``auto`` from a
cluster node) tasks run on that cluster; every node needs ctxselect and the embedder's
extra installed. Without one, a local Ray instance is started, bound to 127.0.0.1
(Ray binds every interface by default) without its dashboard, and stopped on
:meth:`RayExecutor.close`. A Ray session that is already running in this process is
used as it is and left running.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any, TypeVar

from ctxselect._require import require
from ctxselect.errors import WorkerError
from ctxselect.ingest.executor import EXECUTORS, check_workers

T = TypeVar("T")
R = TypeVar("R")

LOCALHOST = "127.0.0.1"
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0, Ray takes the loopback address as its node address and binds its servers
there (measured with Ray 2.60: ``_node_ip_address="127.0.0.1"`` alone is turned into the
machine's external address, and every server listens on it)."""
CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a cluster address to accept a connection (Ray itself retries for
minutes before it gives up on an address nothing listens at)."""
_FEATURE = "the ray executor (parallel ingestion on a Ray cluster)"


def _ray() -> ModuleType:
    return require("ray", extra="ray", feature=_FEATURE)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast when nothing accepts connections at a ``HOST:PORT`` cluster address.

    ``auto`` and other forms without a port are left to Ray.

    Raises:
        WorkerError: The address does not accept a TCP connection within ``timeout``.
    """
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise WorkerError(
            f"no Ray cluster answers at {address!r} ({exc}; waited up to {timeout:g} s): "
            f"check the address (`ray status` on a cluster node prints it) and that the "
            f"port is open, or leave --ray-address out for a local Ray"
        ) from exc


def _loopback_only(ray: ModuleType) -> None:
    """Keep a local Ray on 127.0.0.1 even when ray was imported before the variable was set."""
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if constants is not None and os.environ.get(LOOPBACK_ONLY) == "0":
        constants.ENABLE_RAY_CLUSTER = False


class _Worker:
    """One Ray actor: a process that runs tasks, keeping its module state between them."""

    def run(self, task: Callable[[Any], Any], item: Any) -> Any:
        return task(item)


@EXECUTORS.register("ray")
class RayExecutor:
    """``workers`` Ray actors (one CPU each) running tasks; Ray is joined on first use."""

    name = "ray"

    def __init__(
        self, workers: int = 2, address: str | None = None, *, temp_dir: str | None = None
    ) -> None:
        """Check Ray is installed; nothing starts until the first :meth:`map`.

        Args:
            workers: Actors to run tasks on.
            address: A Ray cluster's address; None starts a local Ray on 127.0.0.1.
            temp_dir: The local Ray's session folder (default: Ray's, ``/tmp/ray``).

        Raises:
            ConfigError: ``workers`` < 1.
            MissingExtraError: ``ctxselect[ray]`` is not installed.
        """
        self.workers = check_workers(workers)
        self.address = address
        self.temp_dir = temp_dir
        if address is None:
            os.environ.setdefault(LOOPBACK_ONLY, "0")  # read when ray is imported
        self._ray = _ray()
        self._started = False
        self._actors: list[Any] = []

    def _connect(self) -> None:
        ray = self._ray
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home
        if ray.is_initialized():
            return
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if self.address is None:
            _loopback_only(ray)
            options.update(
                num_cpus=max(self.workers, os.cpu_count() or 1),
                include_dashboard=False,
                _node_ip_address=LOCALHOST,
                _temp_dir=self.temp_dir,
            )
        else:
            check_reachable(self.address)
        try:
            ray.init(address=self.address, **options)
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {self.address!r}" if self.address else "a local Ray"
            raise WorkerError(
                f"cannot start or reach {where} ({exc}): check the address (`ray status` on "
                f"a cluster node prints it), or leave --ray-address out for a local Ray"
            ) from exc
        self._started = True

    def map(self, task: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Yield ``task(item)`` for each item in order, spread over the actors."""
        if not self._actors:
            self._connect()
            actor = self._ray.remote(num_cpus=1)(_Worker)
            self._actors = [actor.remote() for _ in range(self.workers)]
        pool = self._ray.util.ActorPool(self._actors)
        run: Callable[[Any, T], Any] = lambda worker, item: worker.run.remote(task, item)  # noqa: E731
        return iter(pool.map(run, list(items)))

    def close(self) -> None:
        """Stop the actors, and the local Ray if this executor started it."""
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
        if self._started:
            self._ray.shutdown()
            self._started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


__all__ = ["CONNECT_TIMEOUT", "LOCALHOST", "RayExecutor", "check_reachable"]

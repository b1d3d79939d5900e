"""The executor seam: a local process pool that keeps order, reports failures, is validated.

Tasks are module-level functions here: spawned workers import this module to run them.
"""

from __future__ import annotations

import os
import socket
import sys
import time

import pytest

from ctxselect.errors import ConfigError, MissingExtraError, UnknownNameError, WorkerError
from ctxselect.ingest import (
    EXECUTORS,
    Executor,
    LocalExecutor,
    check_workers,
    executor_names,
    make_executor,
)
from ctxselect.ingest.ray_executor import RayExecutor, check_reachable

_CALLS: list[int] = []  # per worker process: how many tasks it ran


def square_with_pid(value: int) -> tuple[int, int, int]:
    _CALLS.append(value)
    time.sleep(0.01)  # long enough for both workers to take tasks
    return value * value, os.getpid(), len(_CALLS)


def fail_on_three(value: int) -> int:
    if value == 3:
        raise ValueError(f"task {value} refused")
    return value


def die(_value: int) -> int:
    os._exit(3)  # a worker killed mid-task (out of memory, a crash)


def test_the_local_pool_keeps_order_and_runs_in_other_processes() -> None:
    with LocalExecutor(2) as executor:
        assert isinstance(executor, Executor)
        results = list(executor.map(square_with_pid, range(40)))
        again = list(executor.map(square_with_pid, range(3)))  # the same workers, kept
    assert [r[0] for r in results] == [v * v for v in range(40)]
    pids = {pid for _, pid, _ in results}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    # workers live across tasks and maps: their module state grows, never resets
    for pid in pids:
        counts = [n for _, p, n in results if p == pid]
        assert counts == sorted(counts) and counts[0] >= 1
    assert {pid for _, pid, _ in again} <= pids
    assert _CALLS == []  # nothing ran in this process


def test_a_task_error_reaches_the_caller() -> None:
    with LocalExecutor(2) as executor, pytest.raises(ValueError, match="task 3 refused"):
        list(executor.map(fail_on_three, range(6)))


def test_a_dead_worker_is_a_worker_error_that_says_what_to_check() -> None:
    with LocalExecutor(2) as executor, pytest.raises(WorkerError) as caught:
        list(executor.map(die, range(4)))
    assert "__main__" in str(caught.value) and "nothing was written" in str(caught.value)
    assert isinstance(caught.value, RuntimeError)


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_workers_must_be_a_whole_number_of_at_least_one(workers: object) -> None:
    with pytest.raises(ConfigError, match="workers must be a whole number >= 1"):
        check_workers(workers)
    with pytest.raises(ConfigError, match="workers must be"):
        make_executor("local", workers)  # type: ignore[arg-type]


def test_an_unknown_executor_lists_the_registered_ones() -> None:
    assert executor_names() == ["local", "ray"] == EXECUTORS.names()
    with pytest.raises(UnknownNameError, match="unknown executor 'dask': choose one of local, ray"):
        make_executor("dask", 2)


def test_an_address_is_for_ray_only() -> None:
    with pytest.raises(ConfigError, match="for the ray executor"):
        make_executor("local", 2, address="10.0.0.1:6379")


def test_ray_without_its_extra_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[ray\]'"):
        make_executor("ray", 2)
    with pytest.raises(ImportError):
        RayExecutor(2)


def test_a_cluster_address_nobody_listens_at_fails_fast() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.perf_counter()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(WorkerError, match=f"no Ray cluster answers at '{address}'"):
            check_reachable(address, timeout=2.0)
    assert time.perf_counter() - started < 5.0
    check_reachable("auto")  # no port: left to Ray


def test_a_listening_address_passes_the_check() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_reachable(f"127.0.0.1:{server.getsockname()[1]}", timeout=2.0)

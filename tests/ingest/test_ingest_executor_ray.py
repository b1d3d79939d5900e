"""The ray executor on a real local Ray, bound to 127.0.0.1 and shut down afterwards.

Slow (a Ray start takes seconds); CI runs it too (``make test`` installs ``ctxselect[ray]``).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from ctxselect.api import parallel
from ctxselect.config import ChunkSpec
from ctxselect.embed import HashEmbedder
from ctxselect.ingest import Executor, RayExecutor, make_executor
from ctxselect.ingest.ray_executor import LOCALHOST, LOOPBACK_ONLY
from ctxselect.types import Document

ray = pytest.importorskip("ray")  # the extra; make test installs it
pytestmark = pytest.mark.slow

SPEC = ChunkSpec(chunker="paragraph", size=40, tokenizer="chars4")


def _short_temp() -> str:
    # Ray puts sockets under its temp folder: the path must stay short (~100 bytes)
    return tempfile.mkdtemp(prefix="ctxray", dir="/tmp")


def _docs(n: int) -> list[Document]:
    text = "\n\n".join(f"paragraph {j} of a note about shards and queues" for j in range(5))
    return [Document(f"d{i:03d}", f"{text} number {i}", source=f"d{i:03d}") for i in range(n)]


def _unmapped(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> object:
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped or ip


def _listening_addresses() -> set[str]:
    """The addresses the Ray processes this test started listen on (IPv4-mapped IPv6
    addresses as IPv4)."""
    psutil = pytest.importorskip("psutil")
    pids = {p.pid for p in psutil.Process().children(recursive=True)}
    found = {
        str(_unmapped(ipaddress.ip_address(c.laddr.ip)))
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids
    }
    assert found, "no Ray process listens on anything"
    return found


def test_a_local_ray_is_started_on_localhost_and_stopped_on_close() -> None:
    assert not ray.is_initialized()
    folder = _short_temp()
    executor = RayExecutor(2, temp_dir=folder)
    try:
        assert isinstance(executor, Executor)
        tasks = [parallel.ChunkTask(SPEC, (doc,)) for doc in _docs(6)]
        chunks = list(executor.map(parallel.chunk_task, tasks))
        assert [c[0].doc_id for c in chunks] == [f"d{i:03d}" for i in range(6)]  # in order
        assert {node["NodeManagerAddress"] for node in ray.nodes()} == {LOCALHOST}
        assert _listening_addresses() == {LOCALHOST}
    finally:
        executor.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One Ray session for the tests below, bound to 127.0.0.1, always shut down."""
    folder = _short_temp()
    os.environ[LOOPBACK_ONLY] = "0"
    ray._private.ray_constants.ENABLE_RAY_CLUSTER = False  # ray is imported already
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address=LOCALHOST,
        _temp_dir=folder,
        log_to_driver=False,
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


def test_the_fixture_session_listens_on_localhost_only(local_ray: None) -> None:
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {LOCALHOST}
    assert _listening_addresses() == {LOCALHOST}


def test_actors_keep_their_model_and_results_keep_their_order(local_ray: None) -> None:
    from ctxselect.manifest import EmbedderSpec

    model = HashEmbedder()
    spec = EmbedderSpec("hash", model.model_id, model.dim, 50_000)
    with make_executor("ray", 2) as executor:  # type: ignore[attr-defined]
        source = parallel.embedder_source(spec, None, executor)
        assert source.threads is None  # Ray gives each actor its one CPU
        texts = [f"text number {i} about {i % 7}" for i in range(60)]
        tasks = [parallel.EmbedTask(source, tuple(texts[i : i + 10])) for i in range(0, 60, 10)]
        batches = list(executor.map(parallel.embed_task, tasks))
    assert ray.is_initialized()  # a session it did not start is left running
    pids = [b.worker for b in batches]
    assert os.getpid() not in pids and len(set(pids)) <= 2 < len(pids)
    assert {b.loads for b in batches} == {1}  # each actor made the model once
    for task, batch in zip(tasks, batches, strict=True):
        assert (batch.vectors == model.embed(list(task.texts))).all()

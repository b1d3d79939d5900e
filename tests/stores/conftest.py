"""Fixtures of the store tests: a real Milvus Lite 2.5.1 server for the Milvus store.

The server starts on 127.0.0.1 on a free port the first time a test asks for it and
stops when the session ends. Without pymilvus or milvus-lite the Milvus tests skip,
except under CI (``CI`` in 1/true/yes), where they must run: then it is a failure.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from ctxselect.errors import MissingExtraError


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; under CI the Milvus store tests must run, not skip")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A running Milvus Lite server (``.uri`` is ``milvus://127.0.0.1:PORT``)."""
    if importlib.util.find_spec("pymilvus") is None:
        _missing("pymilvus is not installed (pip install 'ctxselect[milvus]')")
    from ctxselect.stores.milvus.server import MilvusServer, binary

    try:
        binary()
    except MissingExtraError as exc:
        _missing(str(exc))
    server = MilvusServer(tmp_path_factory.mktemp("milvus"))
    server.start()
    try:
        yield server
    finally:
        server.stop()

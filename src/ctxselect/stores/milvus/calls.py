"""Every call to a Milvus server with a deadline, and the errors of a closed store.

pymilvus puts no deadline on a call unless it is given one per call (the client's own
``timeout`` only bounds connecting): a server that stops answering without closing the
connection (a stopped process, a frozen VM, a dropped network path) would hold a call
until gRPC's keepalive gives up and pymilvus's retries run out, a minute or more, and a
deadline that passes comes back as a raw ``grpc.RpcError``, not a ``MilvusException``.
:class:`TimedClient` gives every call the store makes a deadline (``TIMEOUT`` seconds,
``CTXSELECT_MILVUS_TIMEOUT`` to change it; collection loads and creation get
``SLOW_TIMEOUT``) and turns gRPC's errors into :class:`NoAnswer`, a
``MilvusException``, so every guard of the store reports it as an unreachable server.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

from ctxselect.errors import ConfigError, CtxselectError

TIMEOUT_ENV = "CTXSELECT_MILVUS_TIMEOUT"
SLOW_TIMEOUT = 300.0
"""Seconds a collection load or creation may take (a large collection loads in minutes)."""
_SLOW = frozenset({"load_collection", "create_collection"})
_LOCAL = frozenset({"create_schema", "prepare_index_params", "close"})  # no server call


def timeout_of(default: float) -> float:
    """Seconds one call may take: ``CTXSELECT_MILVUS_TIMEOUT`` if set, else ``default``.

    Raises:
        ConfigError: The variable is not a number of seconds above 0.
    """
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ConfigError(
            f"{TIMEOUT_ENV}={text!r} is not a number of seconds above 0: set it to e.g. 10 "
            f"(how long one call to the Milvus server may take), or unset it"
        )
    return value


@functools.cache
def no_answer() -> type[Any]:
    """The ``MilvusException`` subclass a call without an answer raises (made on first
    use: pymilvus is an extra, imported only once a store connects)."""
    from pymilvus.exceptions import MilvusException

    class NoAnswer(MilvusException):
        """The server did not answer a call within its deadline (or the call failed in
        gRPC before pymilvus saw it)."""

    return NoAnswer


@contextlib.contextmanager
def answering(timeout: float) -> Iterator[None]:
    """Turn gRPC's errors inside the block (a passed deadline) into :func:`no_answer`."""
    import grpc

    try:
        yield
    except grpc.RpcError as exc:
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            why = f"no answer within {timeout:g} s: is the server stopped or overloaded?"
        else:
            details = getattr(exc, "details", None)
            why = f"{getattr(code, 'name', 'gRPC error')}: {details() if details else exc}"
        raise no_answer()(message=why) from exc


class TimedClient:
    """A ``MilvusClient`` whose every server call has a deadline (see the module).

    Args:
        client: The pymilvus client.
        timeout: Seconds one call may take.
    """

    def __init__(self, client: Any, timeout: float) -> None:
        self.client = client
        self.timeout = timeout

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.client, name)
        if name in _LOCAL or not callable(found):
            return found
        limit = max(self.timeout, SLOW_TIMEOUT) if name in _SLOW else self.timeout

        @functools.wraps(found)
        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", limit)
            with answering(limit):
                return found(*args, **kwargs)

        return call

    def close(self) -> None:
        """Close the connection (no server call: never waits)."""
        self.client.close()


def closed(uri: str) -> CtxselectError:
    """The error of a read or write after ``close()`` (as the embedded store words it)."""
    return CtxselectError(f"index {uri} was closed: open it again with open_index")


def client_of(store: Any) -> Any:
    """The store's client, or :func:`closed`'s error when the store was closed."""
    client = store._client
    if client is None:
        raise closed(store.uri)
    return client


def unanswered(exc: BaseException) -> bool:
    """Whether a client failure means the server did not answer (no deadline met, no
    connection), not that it refused the call."""
    from pymilvus.exceptions import MilvusUnavailableException

    if isinstance(exc, no_answer() | MilvusUnavailableException):
        return True
    return str(getattr(exc, "message", "")).startswith("Fail connecting to server")

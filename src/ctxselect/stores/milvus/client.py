"""The Milvus side of the store: URI, connection, errors, and the queries rows need.

The collections an index is made of and their schemas are in ``schemas``. Strings are
never put in filter expressions (the 2.5 server has no expression templates and its
string escapes differ from JSON's): rows carry ``hash63`` of their ids in INT64 fields,
queries filter on those, and the exact strings are compared here.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import re
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctxselect._require import require
from ctxselect.errors import ConfigError, IndexNotFoundError, StoreUnreachableError
from ctxselect.stores.milvus import calls

SCHEME = "milvus"
TIMEOUT = 10.0
"""Seconds one call to the server may take (``CTXSELECT_MILVUS_TIMEOUT``; see ``calls``)."""
TEXT_BYTES = 65535  # Milvus's VARCHAR limit
PIECE_CHARS = 16000  # text piece: at most 4 UTF-8 bytes a character fits TEXT_BYTES
PIECE_BYTES = 48000  # array piece: base64 makes 64,000 characters
QUERY_MAX = 16384  # Milvus's cap on offset + limit of one query
IN_BATCH = 1000  # ids in one ``in [...]`` filter
META = "__meta"
DENSE = "__dense"
NAME_MAX = 201
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = re.compile(r"(__meta|__dense[0-9]+)$")  # the names of an index's own collections
_URI = re.compile(r"^milvus://(?P<host>[^/:]+|\[[^\]]+\]):(?P<port>\d{1,5})/(?P<name>[^/?#]*)$")


@dataclass(frozen=True, slots=True)
class Address:
    """Where an index lives: ``milvus://HOST:PORT/NAME``."""

    host: str
    port: int
    name: str

    @property
    def uri(self) -> str:
        """The index URI, as users give it."""
        return f"{SCHEME}://{self.host}:{self.port}/{self.name}"

    @property
    def meta(self) -> str:
        """The name of the index's second collection."""
        return self.name + META


def parse_uri(uri: str) -> Address:
    """Split ``milvus://HOST:PORT/NAME``.

    Raises:
        ConfigError: The URI is not of that form, or NAME is not a Milvus collection name.
    """
    found = _URI.match(uri.strip())
    if found is None:
        raise ConfigError(
            f"cannot open index {uri!r}: a Milvus index URI is milvus://HOST:PORT/NAME, "
            f"e.g. milvus://127.0.0.1:19530/notes"
        )
    name, port = found["name"], int(found["port"])
    if len(name) > NAME_MAX:  # room for its own collections' suffixes
        raise ConfigError(
            f"cannot open index {uri!r}: its NAME has {len(name)} characters, more than the "
            f"{NAME_MAX} an index NAME may have (Milvus names stop at 255): pick a shorter NAME"
        )
    if not _NAME.match(name):
        raise ConfigError(
            f"cannot open index {uri!r}: {name!r} is not a usable collection name (letters, "
            f"digits and _, starting with a letter or _)"
        )
    reserved = _RESERVED.search(name)
    if reserved is not None:
        raise ConfigError(
            f"cannot open index {uri!r}: a NAME ending in {reserved[0]!r} is refused, because "
            f"an index named {name[: reserved.start()]!r} keeps its own collection under that "
            f"name (index NAME keeps NAME{META} and NAME{DENSE}DIM beside NAME): "
            f"pick a NAME that does not end in {META!r} or '{DENSE}' and digits"
        )
    if not 0 < port < 65536:
        raise ConfigError(f"cannot open index {uri!r}: port {port} is not 1-65535")
    return Address(found["host"], port, name)


def connect(address: Address, timeout: float | None = None) -> Any:
    """Return a client of ``address``'s server whose calls have a deadline (``calls``).

    Raises:
        MissingExtraError: pymilvus is not installed.
        ConfigError: ``CTXSELECT_MILVUS_TIMEOUT`` is not a number of seconds.
        StoreUnreachableError: The server does not answer (names the URI).
    """
    pymilvus = require("pymilvus", extra="milvus", feature="a milvus:// index")
    timeout = calls.timeout_of(TIMEOUT) if timeout is None else timeout
    quiet = logging.getLogger("pymilvus")
    if quiet.level == logging.WARNING:  # its own default: it would print tracebacks of
        quiet.setLevel(logging.CRITICAL)  # failures we raise as one-line errors anyway
    uri = f"http://{address.host}:{address.port}"
    for attempt in (1, 2):
        started = time.monotonic()
        try:
            with calls.answering(timeout):
                client = calls.TimedClient(pymilvus.MilvusClient(uri=uri, timeout=timeout), timeout)
            client.list_collections()
            return client
        except pymilvus.exceptions.MilvusException as exc:
            # A server that takes TCP connections can be between a GOAWAY (gRPC's
            # "too_many_pings" after an idle spell) and the reconnect: a fresh channel gets
            # one more try. A closed port fails at once; a passed deadline is not retried.
            waited = time.monotonic() - started >= timeout
            if attempt == 2 or waited or not _port_open(address):
                raise unreachable(address, exc) from exc
    raise AssertionError("not reached: the second attempt returns or raises")


def _port_open(address: Address) -> bool:
    try:
        with socket.create_connection((address.host.strip("[]"), address.port), timeout=1.0):
            return True
    except OSError:
        return False


def unreachable(address: Address, exc: BaseException, kept: str = "") -> StoreUnreachableError:
    """The error for a server that does not answer (``kept``: what a write left, said
    after the fix)."""
    return StoreUnreachableError(
        f"cannot reach the Milvus server of index {address.uri} ({_short(exc)}): start it "
        f"(locally: `python -m ctxselect.stores.milvus.server DIR`), resume it, or fix "
        f"HOST:PORT{kept}"
    )


COLLECTION_NOT_FOUND = 100
"""pymilvus's ``ErrorCode.COLLECTION_NOT_FOUND``."""


@contextlib.contextmanager
def reaching(address: Address, store: Any = None) -> Iterator[None]:
    """Turn the client's failures inside the block into :func:`unreachable`'s error.

    With ``store`` (the store the block reads), a collection that is not found because the
    index was removed (or removed and built again) meanwhile says so, as
    :class:`IndexNotFoundError`: the server answered, and "cannot reach" would send the
    user after the wrong cause. The reader opens the URI again on its next call.
    """
    from pymilvus.exceptions import MilvusException

    try:
        yield
    except MilvusException as exc:
        lost = store is not None and getattr(exc, "code", None) == COLLECTION_NOT_FOUND
        if lost and _removed(store):
            raise IndexNotFoundError(
                f"no index at {address.uri}: create one with `ctxselect index PATH... "
                f"--index {address.uri}` (the index this process was reading was "
                f"removed; if one was built again, the next call reads it)"
            ) from exc
        raise unreachable(address, exc) from exc


def _removed(store: Any) -> bool:
    """Whether ``store``'s index is gone from its URI or was replaced (False when that
    cannot be told: the server stopped answering)."""
    from pymilvus.exceptions import MilvusException

    try:
        return bool(store.rebuilt())
    except MilvusException:
        return False


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__


def hash63(text: str) -> int:
    """A stable 63-bit id of ``text`` (rows are found by it, then compared exactly)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def ints(values: Iterable[int]) -> str:
    """An ``in [...]`` list of integers for a filter expression."""
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def batches(items: Sequence[Any], size: int = IN_BATCH) -> Iterator[Sequence[Any]]:
    """Slices of at most ``size`` items (filters stay short)."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


# -- rows --------------------------------------------------------------------------------


def query_all(client: Any, collection: str, expr: str, fields: Sequence[str]) -> list[dict]:
    """Every row matching ``expr`` (past Milvus's per-query cap with an iterator)."""
    rows = client.query(collection, filter=expr, output_fields=list(fields), limit=QUERY_MAX)
    if len(rows) < QUERY_MAX:
        return list(rows)
    out: list[dict] = []
    found = client.query_iterator(
        collection, batch_size=4096, filter=expr, output_fields=list(fields)
    )
    try:
        with calls.answering(getattr(client, "timeout", TIMEOUT)):  # the iterator's own calls
            while batch := found.next():
                out.extend(batch)
    finally:
        found.close()
    return out


def text_pieces(text: str) -> list[str]:
    """``text`` cut into pieces that each fit a VARCHAR (at least one piece)."""
    return [text[i : i + PIECE_CHARS] for i in range(0, len(text), PIECE_CHARS)] or [""]


def array_pieces(array: np.ndarray) -> tuple[dict[str, Any], list[str]]:
    """(dtype and shape, base64 pieces of the bytes) of an array."""
    a = np.ascontiguousarray(array)
    raw = a.tobytes()
    pieces = [
        base64.b64encode(raw[i : i + PIECE_BYTES]).decode("ascii")
        for i in range(0, len(raw), PIECE_BYTES)
    ]
    return {"dtype": a.dtype.str, "shape": list(a.shape)}, pieces or [""]


def join_array(info: dict[str, Any], pieces: Sequence[str]) -> np.ndarray:
    """The array ``array_pieces`` cut (pieces in order)."""
    raw = b"".join(base64.b64decode(p) for p in pieces)
    return np.frombuffer(raw, dtype=np.dtype(info["dtype"])).reshape(info["shape"]).copy()


def dumps(value: Any) -> str:
    """Compact JSON of a manifest or info value."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)

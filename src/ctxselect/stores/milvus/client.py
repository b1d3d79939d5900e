"""The Milvus side of the store: URI, connection, the two collections and their queries.

An index ``milvus://HOST:PORT/NAME`` is two collections (see the package docstring):

- ``NAME``: one row per chunk version (text, offsets, metadata, ``born``), with a BM25
  function on ``body`` (sparse field ``sparse``) for server-side keyword search.
- ``NAME__meta``: everything else, one row kind per ``kind``: ``doc`` (document text in
  pieces), ``tomb`` (a row's removal), ``blob`` (segment arrays in base64 pieces),
  ``manifest`` (its JSON in pieces), ``head`` (a committed generation), ``lock`` (the
  writer's lease), ``vec`` (cached embeddings) and ``layout`` (how the index was built).

Strings are never put in filter expressions (the 2.5 server has no expression templates
and its string escapes differ from JSON's): rows carry ``hash63`` of their ids in INT64
fields, queries filter on those, and the exact strings are compared here.
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
from ctxselect.errors import ConfigError, IndexMismatchError, StoreUnreachableError
from ctxselect.stores.milvus import calls

SCHEME = "milvus"
TIMEOUT = 10.0
"""Seconds one call to the server may take (``CTXSELECT_MILVUS_TIMEOUT``; see ``calls``)."""
LAYOUT_VERSION = 1
"""The collections' layout this code reads and writes (the ``layout`` row holds it)."""
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


@contextlib.contextmanager
def reaching(address: Address) -> Iterator[None]:
    """Turn the client's failures inside the block into :func:`unreachable`'s error."""
    from pymilvus.exceptions import MilvusException

    try:
        yield
    except MilvusException as exc:
        raise unreachable(address, exc) from exc


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


# -- schemas -----------------------------------------------------------------------------

CHUNK_FIELDS = [
    *("id", "chunk_id", "doc_id", "dkey", "ckey", "ordinal", "start_char", "end_char"),
    *("header", "n_tokens", "parent_id", "body", "span", "born"),
]
META_FIELDS = ["id", "kind", "key", "hkey", "ref", "born", "num", "info", "data"]


DEFAULT_BM25 = {"k1": 1.5, "b": 0.75, "stem": True, "stopwords": True}
"""The keyword analysis a new chunk collection gets (``BM25Params()``'s): the server's
BM25 serves an index whose settings equal these (see ``serving``)."""


def analyzer(bm25: dict[str, Any]) -> dict[str, Any]:
    """Milvus analyzer parameters closest to ours: lowercase, English Snowball stems, and
    the stop words of ``ctxselect.retrieve`` (bm25s's list)."""
    filters: list[Any] = ["lowercase"]
    if bm25["stem"]:
        filters.append({"type": "stemmer", "language": "english"})
    if bm25["stopwords"]:
        # the list is data; the store never analyzes text itself
        from ctxselect.retrieve._stopwords import STOPWORDS_EN

        filters.append({"type": "stop", "stop_words": sorted(STOPWORDS_EN)})
    return {"tokenizer": "standard", "filter": filters}


def add_bm25(schema: Any, index: Any, bm25: dict[str, Any]) -> None:
    """Add ``body`` (analyzed as ``bm25`` says), the BM25 function from it into ``sparse``,
    and the sparse field's BM25 index with ``bm25``'s k1 and b."""
    from pymilvus import DataType, Function, FunctionType

    schema.add_field(
        "body",
        DataType.VARCHAR,
        max_length=TEXT_BYTES,
        enable_analyzer=True,
        analyzer_params=analyzer(bm25),
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["body"],
            output_field_names=["sparse"],
        )
    )
    index.add_index(
        field_name="sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"bm25_k1": float(bm25["k1"]), "bm25_b": float(bm25["b"])},
    )


def chunk_schema(client: Any, bm25: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Schema and index parameters of the chunk collection.

    ``body`` is the text a keyword index sees (header, newline, chunk text; the chunk
    text is its tail), the input of a BM25 function whose sparse output ``sparse`` is
    indexed with ``bm25``'s k1 and b.
    """
    from pymilvus import DataType

    bm25 = bm25 or DEFAULT_BM25
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("chunk_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    for name in ("dkey", "ckey", "ordinal", "start_char", "end_char", "n_tokens"):
        schema.add_field(name, DataType.INT64)
    schema.add_field("header", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("parent_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("span", DataType.BOOL)  # True: text too long, read from the document
    schema.add_field("born", DataType.INT64)
    index = client.prepare_index_params()
    add_bm25(schema, index, bm25)
    return schema, index


def dense_name(address: Address, dim: int) -> str:
    """The collection of the chunk vectors of ``dim`` dimensions (server-side ``dense``)."""
    return f"{address.name}{DENSE}{int(dim)}"


def dense_names(client: Any, address: Address, recorded: Sequence[str] | None) -> list[str]:
    """Every vector collection of the index that exists (one per dimension embedded).

    ``recorded`` is the list the index's layout row keeps (every collection a commit of
    this index created): only those are the index's, since another index or a user may
    own a collection whose name looks like one. ``None`` (an index made before the list
    was kept): the names of the form ``NAME__denseDIM`` whose collection has this layout's
    vector fields and is not itself an index (no ``...__meta`` beside it).
    """
    existing = set(client.list_collections())
    if recorded is not None:
        return [n for n in recorded if n in existing]
    prefix = address.name + DENSE
    found = []
    for n in sorted(existing):
        if not (n.startswith(prefix) and n[len(prefix) :].isdigit()) or n + META in existing:
            continue
        fields = {f["name"] for f in client.describe_collection(n).get("fields", [])}
        if {"vector", "chunk_id", "born"} <= fields and "ckey" not in fields:
            found.append(n)
    return found


def dense_schema(client: Any, dim: int, bm25: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Schema and exact (FLAT, inner product = cosine of unit vectors) index of the chunk
    vectors: one row per embedded chunk row, id = the chunk row's id.

    The row also holds the chunk's ``body`` with the chunk collection's BM25 function on
    it, because Milvus's ``hybrid_search`` fuses searches of one collection only: the
    server-side ``hybrid`` searches ``sparse`` and ``vector`` of this collection.
    """
    from pymilvus import DataType

    bm25 = bm25 or DEFAULT_BM25
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("chunk_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("born", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(dim))
    index = client.prepare_index_params()
    index.add_index(field_name="vector", index_type="FLAT", metric_type="IP")
    add_bm25(schema, index, bm25)
    return schema, index


def meta_schema(client: Any) -> tuple[Any, Any]:
    """Schema and index parameters of the meta collection (``v`` only because Milvus
    requires a vector field)."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field("key", DataType.VARCHAR, max_length=TEXT_BYTES)
    for name in ("hkey", "ref", "born", "num"):
        schema.add_field(name, DataType.INT64)
    schema.add_field("info", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("data", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index(field_name="v", index_type="FLAT", metric_type="L2")
    return schema, index


def check_fields(client: Any, address: Address) -> None:
    """Refuse collections this code did not make (other fields: another layout).

    Raises:
        IndexMismatchError: A collection of the index has other fields than this
            layout's (names the collection and how to fix it).
    """
    for name, expected in ((address.name, CHUNK_FIELDS), (address.meta, META_FIELDS)):
        described = client.describe_collection(name)
        fields = {f["name"] for f in described.get("fields", [])}
        missing = sorted(set(expected) - fields)
        if missing:
            raise IndexMismatchError(
                f"index {address.uri}: collection {name!r} was built with other settings "
                f"(it lacks the fields {', '.join(missing)} of a ctxselect index, layout "
                f"{LAYOUT_VERSION}): pick another NAME, or drop the collection and rebuild "
                f"with `ctxselect index PATH... --index {address.uri}`"
            )


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

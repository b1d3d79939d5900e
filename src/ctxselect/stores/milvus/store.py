"""MilvusStore: an index in a Milvus server, ``milvus://HOST:PORT/NAME`` (reads; see
``visible_rows`` for the rows a generation sees, ``writes`` for commits and the package
docstring for the design)."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ctxselect.errors import (
    ConfigError,
    IndexCorruptError,
    IndexMismatchError,
    IndexNotFoundError,
    NotFoundError,
)
from ctxselect.stores import doc_fields
from ctxselect.stores.base import Snapshot
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import schemas as ms
from ctxselect.stores.milvus import snapshots
from ctxselect.stores.milvus.calls import client_of
from ctxselect.stores.milvus.layout import CREATED, new_layout
from ctxselect.stores.milvus.lease import Lease
from ctxselect.stores.milvus.vectors import MilvusVectorCache
from ctxselect.stores.milvus.visible_rows import VisibleRows, document_fields_of
from ctxselect.stores.milvus.writes import MilvusWrites, local_commits
from ctxselect.types import Chunk, ChunkTable, Document

P = ParamSpec("P")
CREATE_SECONDS = 10.0
"""Seconds an open waits for another process that is creating the index to finish."""
R = TypeVar("R")


def _calling(method: Callable[P, R]) -> Callable[P, R]:
    """Turn client failures into one-line ctxselect errors naming the URI."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        store: Any = args[0]
        client_of(store)
        from pymilvus.exceptions import MilvusException

        try:
            return method(*args, **kwargs)
        except MilvusException as exc:
            raise mc.unreachable(store.address, exc) from exc

    return wrapper


class MilvusStore(VisibleRows, MilvusWrites):
    """An index kept in two collections of a Milvus server (see the package docstring).

    Args:
        uri: ``milvus://HOST:PORT/NAME``.
        create: Create the collections when missing; otherwise a missing index raises
            IndexNotFoundError naming the command that creates one.
        wait: Unused (no layout upgrade exists yet); kept for ``open_store``.
    """

    schema_version = ms.LAYOUT_VERSION

    def __init__(self, uri: str, *, create: bool = False, wait: float = 30.0) -> None:
        self.address = mc.parse_uri(uri)
        self.uri = self.address.uri
        self._client: Any = mc.connect(self.address)
        self._pin = threading.local()
        self._manifests: dict[int, dict[str, Any]] = {}
        self._held: dict[str, Lease] = {}
        self.layout: dict[str, Any] = {}
        self.created: str | None = None
        self._dense_fields: dict[str, frozenset[str]] = {}
        try:
            self._open(create)
        except Exception:
            self.close()
            raise

    @_calling
    def _open(self, create: bool) -> None:
        names = (self.address.name, self.address.meta)
        has = self._existing(names)
        if not any(has):
            if not create:
                raise IndexNotFoundError(
                    f"no index at {self.uri}: create one with "
                    f"`ctxselect index PATH... --index {self.uri}`"
                )
            self._create()
        elif not all(has):
            raise IndexMismatchError(
                f"index {self.uri}: collection {names[has.index(True)]!r} exists without "
                f"{names[has.index(False)]!r}, so it was not made by ctxselect (or was built "
                f"with other settings): pick another NAME, or drop it and rebuild with "
                f"`ctxselect index PATH... --index {self.uri}`"
            )
        ms.check_fields(self._client, self.address)
        self._check_layout()
        for name in [*names, *self.dense_collections()]:
            self._client.load_collection(name)

    def _existing(self, names: Sequence[str]) -> list[bool]:
        """Which of ``names`` exist, once another process creating the index (one of its
        collections made, or the layout row not yet written) has finished, or
        ``CREATE_SECONDS`` have passed; collections of other fields end the wait at once."""
        deadline = time.monotonic() + CREATE_SECONDS
        while True:
            has = [bool(self._client.has_collection(n)) for n in names]
            present = [n for n, h in zip(names, has, strict=True) if h]
            if not present or not self._ours(present) or (all(has) and self.read_layout()):
                return has
            if time.monotonic() >= deadline:
                return has
            time.sleep(0.1)

    def _ours(self, names: Sequence[str]) -> bool:
        """Whether the collections ``names`` have the fields this layout gives them."""
        expected = {self.address.name: ms.CHUNK_FIELDS, self.address.meta: ms.META_FIELDS}
        for name in names:
            described = self._client.describe_collection(name)
            if not set(expected[name]) <= {f["name"] for f in described.get("fields", [])}:
                return False
        return True

    def _create(self) -> None:
        for name, make in (
            (self.address.name, ms.chunk_schema),
            (self.address.meta, ms.meta_schema),
        ):
            schema, index = make(self._client)
            self._client.create_collection(
                name, schema=schema, index_params=index, consistency_level="Strong"
            )
        # A second process creating the index at the same time upserts its own row: the
        # last one stays, and ``_check_layout`` reads back whichever that is.
        self.write_layout(new_layout())

    def _check_layout(self) -> None:
        self.layout = self.read_layout()
        self.created = self.layout.get(CREATED)
        found = self.layout.get("layout")
        if found != ms.LAYOUT_VERSION:
            raise IndexMismatchError(
                f"index {self.uri} was built with other settings (collection layout {found!r}, "
                f"this ctxselect reads layout {ms.LAYOUT_VERSION}): rebuild it under a new NAME "
                f"with `ctxselect index PATH... --index milvus://HOST:PORT/NEW_NAME`"
            )

    # -- generations and the manifest --------------------------------------------------

    @_calling
    def generation(self) -> int:
        """The committed generation (the pinned one inside ``reading``)."""
        pinned = getattr(self._pin, "generation", None)
        return int(pinned) if pinned is not None else self.head()

    def head(self) -> int:
        """The newest generation whose head row exists (0: nothing committed)."""
        rows = mc.query_all(self._client, self.address.meta, 'kind == "head"', ["born"])
        return max((int(r["born"]) for r in rows), default=0)

    def data_version(self) -> int:
        """The committed generation: it changes with every commit of any process (inside
        ``reading`` the pinned one, read from the server when the pin was taken)."""
        if self._client is None:
            return -1
        pinned = getattr(self._pin, "generation", None)
        if pinned is not None:
            return int(pinned)
        with mc.reaching(self.address):  # every search asks first: a gone server says so
            return self.head()

    def replaced(self) -> bool:
        """Whether the index opened is gone from the URI or another was built in its
        place (its collections dropped and made again: generations restart at 1, so
        ``data_version`` cannot tell). One query by primary key (``layout``); a reader
        then opens the URI again. False once the store is closed."""
        if self._client is None:
            return False
        with mc.reaching(self.address):
            return self.rebuilt()

    def local_commits(self) -> int:
        """How many commits this process made to Milvus indexes."""
        return local_commits()

    @_calling
    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest of the committed (or pinned) generation."""
        return dict(self.manifest_at(self.generation()))

    def manifest_at(self, generation: int) -> dict[str, Any]:
        """The manifest a generation committed (cached: it never changes)."""
        if generation == 0:
            return {"schema_version": ms.LAYOUT_VERSION}
        found = self._manifests.get(generation)
        if found is None:
            expr = f'kind == "manifest" and born == {generation}'
            rows = mc.query_all(self._client, self.address.meta, expr, ["num", "data"])
            if not rows:
                raise IndexCorruptError(
                    f"index {self.uri} names generation {generation} but holds no manifest for "
                    f"it: run `ctxselect verify --index {self.uri}`"
                )
            text = "".join(r["data"] for r in sorted(rows, key=lambda r: r["num"]))
            found = self._manifests[generation] = json.loads(text)
        return found

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Pin every read of this thread inside the block to one committed generation."""
        if getattr(self._pin, "generation", None) is not None:
            yield
            return
        self._pin.generation = self.generation()
        try:
            yield
        finally:
            self._pin.generation = None

    # -- reads -------------------------------------------------------------------------

    @_calling
    def doc_hashes(self, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
        """Return ``{doc_id: content_hash}`` of every document, or of ``doc_ids`` only."""
        rows = self.doc_rows(self.generation(), doc_ids, parts=False)
        return {r["key"]: json.loads(r["info"])["content_hash"] for r in rows}

    @_calling
    def document_fields(self, doc_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """Return ``kind``, ``path``, ``title`` and the user fields of each of ``doc_ids``."""
        return document_fields_of(self.doc_rows(self.generation(), doc_ids, parts=False))

    @_calling
    def field_keys(self) -> list[str]:
        """Return every metadata key the index stores (built-in ones first)."""
        found = document_fields_of(self.doc_rows(self.generation(), None, parts=False))
        return doc_fields.all_keys(k for f in found.values() for k in f)

    @_calling
    def chunks_of(self, doc_ids: Sequence[str]) -> list[Chunk]:
        """Return the chunks of ``doc_ids`` (any order)."""
        generation, wanted = self.generation(), set(doc_ids)
        out: list[Chunk] = []
        for part in mc.batches(sorted({mc.hash63(d) for d in wanted})):
            rows = self.chunk_rows(generation, f"dkey in {mc.ints(part)}")
            out += [self.to_chunk(r, generation) for r in rows if r["doc_id"] in wanted]
        return out

    def _live(self) -> tuple[int, list[dict]]:
        generation = self.generation()
        rows = sorted(self.chunk_rows(generation), key=lambda r: r["chunk_id"])
        return generation, rows

    @_calling
    def iter_chunks(self) -> Iterator[Chunk]:
        """Yield every live chunk in chunk_id order."""
        generation, rows = self._live()
        return iter([self.to_chunk(r, generation) for r in rows])

    @_calling
    def chunk_table(self) -> ChunkTable:
        """Return every live chunk as columns, row order = chunk_id order."""
        generation, rows = self._live()
        return ChunkTable.from_chunks([self.to_chunk(r, generation) for r in rows])

    @_calling
    def live_order(self) -> np.ndarray:
        """Return the id of every live chunk, in chunk_id order."""
        return np.array([r["id"] for r in self._live()[1]], dtype=np.int64)

    @_calling
    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk or raise NotFoundError."""
        generation = self.generation()
        rows = self.chunk_rows(generation, f"ckey == {mc.hash63(chunk_id)}")
        for row in rows:
            if row["chunk_id"] == chunk_id:
                return self.to_chunk(row, generation)
        raise NotFoundError(
            f"no chunk {chunk_id!r} in index {self.uri}: chunk ids look like 'DOC_ID#N' "
            f"and come from `ctxselect search`"
        )

    @_calling
    def get_document(self, doc_id: str) -> Document:
        """Return one document or raise NotFoundError."""
        return self._document(doc_id, self.generation())

    @_calling
    def span_text(self, doc_id: str, start: int, end: int) -> str:
        """Return the document's text in ``[start, end)``."""
        return self._document(doc_id, self.generation()).text[start:end]

    @_calling
    def counts(self) -> dict[str, int]:
        """Return the number of documents, chunks and tokens (kept by every commit)."""
        counts = self.read_manifest().get("counts") or {}
        return {k: int(counts.get(k, 0)) for k in ("documents", "chunks", "tokens")}

    @_calling
    def disk_bytes(self) -> int:
        """An estimate: the bytes of the live rows' fields and arrays as sent to Milvus
        (kept by every commit). The server's own files (indexes, WAL, versions kept for
        readers) are not counted: Milvus does not report them per collection."""
        return int(self.read_manifest().get("stored_bytes", 0))

    # -- snapshots ---------------------------------------------------------------------

    @_calling
    def snapshot(self, eager: bool | None = None, previous: Snapshot | None = None) -> Snapshot:
        """Return the last committed generation's rows and segments.

        Args:
            eager: Keep every chunk's text in memory (default: when the index has at most
                ``TEXTS_IN_MEMORY_MAX`` chunks); otherwise texts are read per hit.
            previous: An earlier snapshot of this index; its base arrays and the chunks it
                holds are reused when the base is the same.
        """
        return snapshots.snapshot_of(self, eager, previous)

    @_calling
    def read_group(self, group: str) -> dict[str, np.ndarray]:
        """The arrays of one blob group (``base/G`` or ``delta/S``), by ``mode/name``."""
        return snapshots.read_group(self, group)

    @_calling
    def read_json(self, group: str) -> Any:
        """A JSON value stored in pieces under ``group``."""
        return snapshots.read_json(self, group)

    # -- server-side ranking (ServingStore) --------------------------------------------

    @_calling
    def served_modes(self, snapshot: Snapshot) -> tuple[str, ...]:
        """The modes Milvus ranks for ``snapshot`` (``bm25``, ``dense``, ``hybrid``; see
        ``serving``)."""
        from ctxselect.stores.milvus.serving import served_modes

        return served_modes(self, snapshot)

    @_calling
    def searcher(self, mode: str, snapshot: Snapshot, context: Any) -> Any:
        """A retriever of ``mode`` answered by the server for ``snapshot``'s generation."""
        from ctxselect.stores.milvus import serving

        embedder = getattr(context, "embedder", None)
        if mode == serving.MilvusBM25Searcher.mode:
            return serving.MilvusBM25Searcher(self, snapshot)
        if mode == serving.MilvusDenseSearcher.mode and embedder is not None:
            return serving.MilvusDenseSearcher(self, snapshot, embedder)
        if mode == serving.MilvusHybridSearcher.mode and embedder is not None:
            return serving.MilvusHybridSearcher(self, snapshot, embedder, context.fusion)
        raise ConfigError(f"index {self.uri} does not rank {mode!r} on the server")

    # -- the rest of the protocol ------------------------------------------------------

    def vector_cache(self) -> MilvusVectorCache:
        """The index's vectors by model and content hash."""
        return MilvusVectorCache(self)

    def lock(self, wait: float = 0.0) -> Lease:
        """Return the writer lease (a context manager; see ``lease``)."""
        return Lease(self, wait=wait)

    @_calling
    def verify(self) -> tuple[list[str], list[str], list[str]]:
        """Check the index; remove leftovers of an interrupted write when no writer runs."""
        from ctxselect.stores.milvus.verify import verify_store

        return verify_store(self)

    def check_base(self) -> None:
        """Nothing to check: the base is rows and blobs the Milvus server stores and
        serves whole (``verify`` compares them with the manifest)."""

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

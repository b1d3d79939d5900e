"""The write half of :class:`~ctxselect.stores.milvus.store.MilvusStore`: the four commits.

Every commit writes rows tagged ``born = N`` (the generation it makes), then the
manifest of N in pieces, then re-checks the lease and that the head is still N - 1, and
only then inserts the one row ``head N``: readers take the newest head as the committed
generation and see nothing of N before it. A removal is a ``tomb`` row (``born = N``)
naming the removed row, never an update. Rows of a generation without a head are
leftovers of an interrupted write: the next commit (and ``verify``) deletes them first.
First of all, a commit checks that the index is still the one the store opened
(``LayoutRows.rebuilt``): generations restart at 1 in an index built again.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ctxselect.errors import IndexWriteError
from ctxselect.stores.base import ModeArrays
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import rows as mr
from ctxselect.stores.milvus.calls import client_of, unanswered
from ctxselect.stores.milvus.layout import LayoutRows
from ctxselect.types import Chunk, Document

_COMMITS = [0]
P = ParamSpec("P")
R = TypeVar("R")


def local_commits() -> int:
    """How many commits this process made to Milvus indexes (open indexes poll it)."""
    return _COMMITS[0]


def _writing(method: Callable[P, R]) -> Callable[P, R]:
    """Turn client failures of a commit into one-line errors: a server that does not
    answer is the store's unreachable error, any other failure IndexWriteError; either
    way the last commit stays (its rows without a head row are leftovers)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from pymilvus.exceptions import MilvusException

        store: Any = args[0]
        client_of(store)  # a closed store says so, not AttributeError
        try:
            return method(*args, **kwargs)
        except MilvusException as exc:
            if unanswered(exc):
                kept = "; the last committed generation is kept: run the command again"
                raise mc.unreachable(store.address, exc, kept) from exc
            raise IndexWriteError(
                f"writing index {store.uri} failed ({mc._short(exc)}); the last committed "
                f"generation is kept: check the server and run the command again"
            ) from exc

    return wrapper


class MilvusWrites(LayoutRows):
    """Commits of a Milvus index (mixed into MilvusStore; rows, the layout row and the
    vector collections are ``LayoutRows``')."""

    # provided by the store
    head: Callable[[], int]
    manifest_at: Callable[[int], dict[str, Any]]
    chunk_rows: Callable[..., list[dict]]
    doc_rows: Callable[..., list[dict]]
    read_json: Callable[[str], Any]

    # -- the commit protocol -----------------------------------------------------------

    def _begin(self, expected: int | None = None) -> tuple[int, dict[str, Any]]:
        """Check the lease, delete leftovers; return (committed generation, manifest).

        A lease of ours another writer took before this commit wrote anything is waited
        for again (``Lease.regain``).

        Raises:
            IndexWriteError: The index was removed or built again under this URI since
                the store opened it (what the write prepared belongs to the old one), or
                it changed during a compaction that expected ``expected``.
        """
        if self.rebuilt():
            raise IndexWriteError(
                f"index {self.uri} was removed or built again by another process after this "
                f"command opened it, so what it prepared no longer fits; nothing was "
                f"written: run the command again"
            )
        self.check_lease(written=False)  # first: it may wait for the lease again
        generation = self.head()
        if expected is not None and generation != expected:
            raise IndexWriteError(
                f"index {self.uri} changed while it was being compacted: run the command again"
            )
        if "dense" not in self.layout:  # made before the layout kept the list: keep it now
            self._record_dense()
        self.remove_leftovers(generation)
        return generation, dict(self.manifest_at(generation))

    def _finish(self, generation: int, ids: Iterator[int], manifest: dict[str, Any]) -> int:
        """Write the manifest of ``generation + 1``, then flip the head to it."""
        new = generation + 1
        manifest["generation"] = new
        manifest["seq"] = next(ids)  # ids below it are taken
        manifest["stored_bytes"] = int(manifest.get("row_bytes", 0)) + mr.blob_bytes(manifest)
        self._put_meta(
            [
                self.meta_row(_manifest_id(new, n), "manifest", born=new, num=n, data=piece)
                for n, piece in enumerate(mc.text_pieces(mc.dumps(manifest)))
            ]
        )
        self.check_lease()
        if self.head() != generation:
            raise IndexWriteError(
                f"index {self.uri} was committed to by another writer meanwhile (no lease "
                f"was held): run the command again, holding the lock"
            )
        self._flip(new)
        return new

    def _flip(self, generation: int) -> None:
        """Insert the head row: the commit point.

        Raises:
            StoreUnreachableError: The server did not answer the insert: it may still
                apply it once it answers again, so the message says the commit is unknown.
        """
        from pymilvus.exceptions import MilvusException

        row = self.meta_row(_manifest_id(generation, 0xFFFF), "head", born=generation)
        try:
            self._put_meta([row])
        except MilvusException as exc:
            if not unanswered(exc):
                raise
            raise mc.unreachable(
                self.address,
                exc,
                f"; generation {generation} was sent but not confirmed, so it is committed "
                f"only if the server applies it when it answers again: check with "
                f"`ctxselect info --index {self.uri}` then, and run the command again if not",
            ) from exc
        _COMMITS[0] += 1
        for lease in self._held.values():  # what this writer prepares next reads it
            lease.head = generation

    def remove_leftovers(self, generation: int) -> int:
        """Delete rows of generations after ``generation`` (an interrupted write's)."""
        later = f"born > {generation}"
        kinds = '["doc", "tomb", "blob", "manifest"]'
        found = [
            (name, mc.query_all(self._client, name, later, ["id"]))
            for name in (self.address.name, *self.dense_collections())
        ]
        meta = mc.query_all(self._client, self.address.meta, f"kind in {kinds} and {later}", ["id"])
        found.append((self.address.meta, meta))
        for collection, rows in found:
            for part in mc.batches([r["id"] for r in rows]):
                self._client.delete(collection, filter=f"id in {mc.ints(part)}")
        return sum(len(rows) for _, rows in found)

    def _purge(self, before: int | None) -> None:
        """Delete what only generations before ``before`` can see (the previous base's
        generation, as the embedded store keeps the previous base file)."""
        if not before:
            return
        meta = self.address.meta
        tombs = mc.query_all(
            self._client, meta, f'kind == "tomb" and born <= {before}', ["id", "key", "ref"]
        )
        chunks = [int(r["ref"]) for r in tombs if r["key"] == "chunk"]
        docs = [int(r["ref"]) for r in tombs if r["key"] == "doc"]
        for collection in [self.address.name, *self.dense_collections()]:
            for part in mc.batches(chunks):
                self._client.delete(collection, filter=f"id in {mc.ints(part)}")
        for part in mc.batches(docs):
            self._client.delete(meta, filter=f'kind == "doc" and ref in {mc.ints(part)}')
        for part in mc.batches([int(r["id"]) for r in tombs]):
            self._client.delete(meta, filter=f"id in {mc.ints(part)}")
        kinds = '["blob", "manifest", "head"]'
        self._client.delete(meta, filter=f"kind in {kinds} and born < {before}")

    # -- commits -----------------------------------------------------------------------

    @_writing
    def commit_update(
        self,
        *,
        documents: Sequence[Document],
        chunks: Sequence[Chunk],
        removed: Sequence[str],
        arrays: ModeArrays,
        dead_terms: Mapping[str, Mapping[str, int]],
        manifest: Mapping[str, Any],
        rebuild: bool = False,
    ) -> int:
        """Store documents and chunks with their segment, and remove ``removed``
        (see :meth:`ctxselect.stores.Store.commit_update`)."""
        generation, current = self._begin()
        new = generation + 1
        ids = itertools.count(int(current.get("seq", 0)) + 1)
        doomed = list(dict.fromkeys([*removed, *(d.doc_id for d in documents)]))
        dead_chunks = (
            self.chunk_rows(generation) if rebuild else self._chunks_of(generation, doomed)
        )
        dead_docs = self.doc_rows(generation, doomed, parts=False)
        meta = [
            *(
                mr.meta_row(next(ids), "tomb", key="chunk", ref=int(r["id"]), born=new)
                for r in dead_chunks
            ),
            *(
                mr.meta_row(next(ids), "tomb", key="doc", ref=int(r["ref"]), born=new)
                for r in dead_docs
            ),
        ]
        docs, doc_bytes = mr.doc_rows(ids, documents, new)
        chunk_rows, chunk_bytes = mr.chunk_rows(ids, chunks, documents, new)
        keys = {**current, **manifest}
        new_ids = np.array([r["id"] for r in chunk_rows], dtype=np.int64)
        meta += self._segment(ids, keys, current, mr.flat(arrays, new_ids), new, rebuild)
        if not rebuild:
            meta += self._dead_terms(ids, keys, current, dead_terms, new)
        gone = sum(mr.chunk_bytes(r) for r in dead_chunks)
        gone += sum(int(mr.info_of(r).get("bytes", 0)) for r in dead_docs)
        keys["row_bytes"] = int(current.get("row_bytes", 0)) + doc_bytes + chunk_bytes - gone
        keys["counts"] = mr.counts(current, documents, chunks, dead_docs, dead_chunks)
        keys["pending"] = mr.pending(current, len(chunks), len(dead_chunks), rebuild)
        self._put_meta(meta + docs)
        self._insert(self.address.name, chunk_rows, upsert=False)
        self._put_dense(arrays.get("dense"), chunk_rows, new)
        done = self._finish(generation, ids, keys)
        before = current.get("base")
        if rebuild and isinstance(before, dict):
            self._purge(int(before["gen"]))
        return done

    def _segment(
        self,
        ids: Iterator[int],
        keys: dict[str, Any],
        current: Mapping[str, Any],
        arrays: dict[str, np.ndarray],
        new: int,
        rebuild: bool,
    ) -> list[dict[str, Any]]:
        """Rows of the new base (``rebuild``) or delta segment; ``keys`` name it."""
        if not rebuild and len(arrays["rowids"]) == 0:
            return []
        blobs, size = mr.group_rows(ids, f"base/{new}" if rebuild else f"delta/{new}", arrays, new)
        if rebuild:
            keys.update(base={"rows": len(arrays["rowids"]), "gen": new, "bytes": size})
            keys.update(segments=[], segment_bytes={}, dead_terms=None)
        else:
            keys["segments"] = [*current.get("segments", []), new]
            keys["segment_bytes"] = {**current.get("segment_bytes", {}), str(new): size}
        return blobs

    def _dead_terms(
        self,
        ids: Iterator[int],
        keys: dict[str, Any],
        current: Mapping[str, Any],
        dead_terms: Mapping[str, Mapping[str, int]],
        new: int,
    ) -> list[dict[str, Any]]:
        """Rows of the deleted terms since the base, when this commit adds any."""
        old = self.read_json(current["dead_terms"]) if current.get("dead_terms") else {}
        merged = mr.add_terms(old, dead_terms)
        if merged == old:
            return []
        keys["dead_terms"] = f"json/deadterms/{new}"
        return mr.json_rows(ids, keys["dead_terms"], merged, new)

    @_writing
    def commit_base(
        self,
        *,
        arrays: ModeArrays,
        rowids: np.ndarray,
        expected_generation: int,
        manifest: Mapping[str, Any],
    ) -> int:
        """Replace the base and every delta with one new base (compaction)."""
        generation, current = self._begin(expected_generation)
        new = generation + 1
        ids = itertools.count(int(current.get("seq", 0)) + 1)
        rows, size = mr.group_rows(ids, f"base/{new}", mr.flat(arrays, rowids), new)
        self._put_meta(rows)
        keys = {**current, **manifest, "segments": [], "segment_bytes": {}, "dead_terms": None}
        keys["base"] = {"rows": len(rowids), "gen": new, "bytes": size}
        done = self._finish(generation, ids, keys)
        before = current.get("base")
        if isinstance(before, dict):
            self._purge(int(before["gen"]))
        return done

    @_writing
    def commit_deltas(
        self, *, arrays: ModeArrays, rowids: np.ndarray, expected_generation: int
    ) -> int:
        """Replace every delta segment with one holding all of their rows, in order."""
        generation, current = self._begin(expected_generation)
        new = generation + 1
        ids = itertools.count(int(current.get("seq", 0)) + 1)
        rows, size = mr.group_rows(ids, f"delta/{new}", mr.flat(arrays, rowids), new)
        self._put_meta(rows)
        keys = {**current, "segments": [new], "segment_bytes": {str(new): size}}
        return self._finish(generation, ids, keys)

    @_writing
    def commit_settings(self, keys: Mapping[str, Any]) -> int:
        """Set manifest keys that change how the index is searched, as a new generation."""
        generation, current = self._begin()
        ids = itertools.count(int(current.get("seq", 0)) + 1)
        return self._finish(generation, ids, {**current, **keys})

    # -- pieces ------------------------------------------------------------------------

    def _chunks_of(self, generation: int, doc_ids: Sequence[str]) -> list[dict]:
        wanted, out = set(doc_ids), []
        for part in mc.batches(sorted({mc.hash63(d) for d in wanted})):
            rows = self.chunk_rows(generation, f"dkey in {mc.ints(part)}")
            out += [r for r in rows if r["doc_id"] in wanted]
        return out


def _manifest_id(generation: int, piece: int) -> int:
    """Id of a manifest piece (``piece`` < 65535) or of the head row (65535) of a
    generation: negative, apart from the counted ids of other rows and from vectors'."""
    return -((1 << 32) + (generation << 16) + piece)

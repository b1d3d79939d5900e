"""The Store seam: where documents, chunks, index segments and the manifest live.

The embedded store (``stores/embedded``: SQLite plus ``.npy`` files) is the default; the
Milvus store (``stores/milvus``, ``milvus://HOST:PORT/NAME``) sits behind the same seam,
so chunking, budget selection and evaluation never see which one is in use. Composition
code (``api``, ``indexing``, ``modes``, ``tuning``, ...) opens a store with
:func:`ctxselect.stores.open_store` and uses only what :class:`Store` declares. A store's
promises:

- **Generations.** Every commit is atomic and bumps ``generation()``; a reader sees one
  committed generation at a time (:class:`Snapshot`, :meth:`Store.reading`) and never a
  half-written one.
- **Segments.** The keyword index of each mode is a base segment plus delta segments
  and deleted rows (:class:`~ctxselect.types.Segments`); compaction folds them into a
  new base. A store that merges on its own may return compacted snapshots (the Milvus
  store keeps the same segments as the embedded one).
- **One writer.** ``lock(wait)`` is held around every write; readers never take it.

``tests/stores/test_store_contract.py`` checks these promises against every store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ctxselect.types import Chunk, ChunkTable, Document, Rows, Segments

if TYPE_CHECKING:  # the Retriever seam, for types only: a store never ranks client-side
    from ctxselect.retrieve.base import Retriever

ModeArrays = Mapping[str, Mapping[str, np.ndarray]]
"""mode -> array name -> array: what one segment holds for each retrieval mode."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One committed generation of an index, as a search reads it.

    Attributes:
        generation: The commit this is; a store's ``generation()`` says when it is stale.
        manifest: Settings, counts, timestamps of that commit.
        rows: The chunks behind the global rows (base rows, then delta rows).
        segments: Each mode's base segment, deltas and deleted rows.
        rowids: The store's id of the chunk behind each global row.
    """

    generation: int
    manifest: Mapping[str, Any]
    rows: Rows
    segments: Mapping[str, Segments]
    rowids: np.ndarray


@runtime_checkable
class VectorStore(Protocol):
    """Embeddings kept by an index, by model id and chunk content hash, so re-indexing
    never embeds an unchanged chunk twice (a ``ctxselect.embed.VectorCache`` that can
    also forget)."""

    def get_many(self, model_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the stored vectors of ``model_id`` among ``keys`` (missing keys are absent)."""
        ...

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store ``vectors`` (key -> vector) of ``model_id``; a stored key is replaced."""
        ...

    def prune(self, model_id: str, keep: Sequence[str]) -> int:
        """Keep only the vectors of ``model_id`` under ``keep``; return how many went.

        Vectors of other models are dropped too: an index embeds with one model.
        """
        ...


@runtime_checkable
class Store(Protocol):
    """Persistent home of one index: everything composition code may ask of a store.

    Open one with :func:`ctxselect.stores.open_store`; implementations live in their own
    subpackage of ``ctxselect.stores`` and register a URI scheme there.
    """

    @property
    def uri(self) -> str:
        """Where the index lives, as users name it and :func:`open_store` takes it back
        (the folder of an embedded index; ``scheme://...`` for a remote one). Messages
        and reports show it."""
        ...

    @property
    def schema_version(self) -> int:
        """The version of the storage layout this store reads and writes."""
        ...

    # -- reading (any process, no lock) --------------------------------------------------

    def read_manifest(self) -> dict[str, Any]:
        """Return the manifest (schema version, generation, settings, counts, timestamps)."""
        ...

    def generation(self) -> int:
        """Return the committed generation (0 when new; grows by one with every commit)."""
        ...

    def data_version(self) -> int:
        """Return a number that changes when another process or connection commits.

        Cheap enough to call before every search; only its changes mean anything.
        """
        ...

    def replaced(self) -> bool:
        """Return whether the index this store opened is no longer at its address: its
        files deleted, or another index built in their place. A reader then opens
        ``uri`` again (:func:`ctxselect.stores.open_store`); a store whose server owns
        its data answers False. Cheap: called before reads, like ``data_version``."""
        ...

    def local_commits(self) -> int:
        """Return how many commits this process has made to stores of this kind.

        An open index compares it between calls to reload at once after a write of its
        own process (``data_version`` may not see those).
        """
        ...

    def snapshot(self, eager: bool | None = None, previous: Snapshot | None = None) -> Snapshot:
        """Return the last committed generation's rows and segments.

        Args:
            eager: Keep every chunk's text in memory (default: the store decides by size).
            previous: An earlier snapshot of this store whose unchanged parts may be reused.

        Raises:
            IndexNotFoundError: Nothing was ever committed.
        """
        ...

    def reading(self) -> AbstractContextManager[None]:
        """Pin every read inside the block to one committed generation (re-entrant).

        Hold it for one search at most: a store may keep old generations alive meanwhile.
        """
        ...

    def doc_hashes(self, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
        """Return ``{doc_id: content_hash}`` of every document (or of ``doc_ids``)."""
        ...

    def chunks_of(self, doc_ids: Sequence[str]) -> list[Chunk]:
        """Return the chunks of the given documents (any order; unknown ids give none)."""
        ...

    def chunk_table(self) -> ChunkTable:
        """Return every live chunk as a column table in chunk_id order."""
        ...

    def iter_chunks(self) -> Iterator[Chunk]:
        """Yield every live chunk in chunk_id order."""
        ...

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk or raise NotFoundError."""
        ...

    def get_document(self, doc_id: str) -> Document:
        """Return one document or raise NotFoundError."""
        ...

    def document_fields(self, doc_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """Return the metadata ``--where`` filters on of each stored one of ``doc_ids``:
        ``kind``, ``path``, ``title`` and its user fields (all values strings)."""
        ...

    def field_keys(self) -> list[str]:
        """Return every metadata key the index stores (built-in ones first)."""
        ...

    def span_text(self, doc_id: str, start: int, end: int) -> str:
        """Return ``document.text[start:end]`` (NotFoundError for an unknown document)."""
        ...

    def counts(self) -> dict[str, int]:
        """Return ``{"documents": n, "chunks": m, "tokens": t}``."""
        ...

    def live_order(self) -> np.ndarray:
        """Return the store id of every live chunk, in chunk_id order (compaction's rows)."""
        ...

    def disk_bytes(self) -> int:
        """Return the bytes the index takes in storage (what ``ctxselect info`` shows)."""
        ...

    # -- writing (one process at a time, holding ``lock``) -----------------------------

    def lock(self, wait: float = 0.0) -> AbstractContextManager[Any]:
        """Return the writer lock; entering it fails with IndexLockedError when busy."""
        ...

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
        """Commit documents in and out with their delta segment (or a new base).

        Returns:
            The new generation.
        """
        ...

    def commit_base(
        self,
        *,
        arrays: ModeArrays,
        rowids: np.ndarray,
        expected_generation: int,
        manifest: Mapping[str, Any],
    ) -> int:
        """Commit a compacted base that replaces the base and every delta.

        Raises:
            IndexWriteError: The store is no longer at ``expected_generation``.
        """
        ...

    def commit_deltas(
        self, *, arrays: ModeArrays, rowids: np.ndarray, expected_generation: int
    ) -> int:
        """Commit one delta segment that replaces every delta segment."""
        ...

    def commit_settings(self, keys: Mapping[str, Any]) -> int:
        """Set manifest keys that change how the index is searched, as a new generation."""
        ...

    def vector_cache(self) -> VectorStore:
        """Return the index's vectors by model and content hash (dense retrieval)."""
        ...

    # -- upkeep ------------------------------------------------------------------------

    def verify(self) -> tuple[list[str], list[str], list[str]]:
        """Check the stored index; return (checks run, problems found, leftovers removed).

        No problem lines means the index is sound; leftovers of an interrupted write are
        removed only when no writer is running.
        """
        ...

    def check_base(self) -> None:
        """Raise IndexCorruptError, naming the file and the repair, when the stored base
        a write would build on is damaged (cheap when nothing suggests damage). A store
        whose server owns its data has nothing to check here."""
        ...

    def close(self) -> None:
        """Release the store (connections, files); it cannot be used afterwards."""
        ...


@runtime_checkable
class ServingStore(Protocol):
    """A store that ranks some modes itself (server-side search), an optional capability.

    The read path asks it first: a mode in ``served_modes(snapshot)`` is searched through
    ``searcher``; any other mode loads from the snapshot's segments as usual. Results may
    differ from the client-side retriever of the same mode (the store documents how).
    """

    def served_modes(self, snapshot: Snapshot) -> tuple[str, ...]:
        """Return the modes this store ranks itself for ``snapshot`` (may be none)."""
        ...

    def searcher(self, mode: str, snapshot: Snapshot, context: Any) -> Retriever:
        """Return a retriever of ``mode`` that searches ``snapshot``'s generation.

        ``context`` is the mode's ``ctxselect.retrieve.modes.ModeContext`` (the query
        embedder of a vector mode, the index's BM25 settings).
        """
        ...

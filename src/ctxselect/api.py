"""The facade: the only module that composes the pipeline's stages.

``index_paths`` runs ingest -> chunk -> index into a store; ``open_index`` returns an
:class:`Index` whose methods run the read path (retrieve -> budget). The CLI and the MCP
server call these functions and nothing else.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxselect import budget as _budget
from ctxselect import chunk as _chunk
from ctxselect import ingest as _ingest
from ctxselect import retrieve as _retrieve
from ctxselect import tokens as _tokens
from ctxselect.config import (
    DEFAULT_FORMAT,
    DEFAULT_K,
    DEFAULT_MODE,
    DEFAULT_PACKER,
    BM25Params,
    ChunkSpec,
    resolve_index_dir,
)
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.index.writer import write_changes
from ctxselect.registry import Registry
from ctxselect.retrieve.base import RETRIEVERS, Retriever
from ctxselect.stores.embedded.sqlite import SCHEMA_VERSION, SQLiteStore
from ctxselect.types import (
    Chunk,
    ChunkTable,
    Document,
    Explanation,
    Hit,
    IndexInfo,
    IndexReport,
    Selection,
)

DEFAULT_MAX_BYTES = _ingest.DEFAULT_MAX_BYTES


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _retriever_params(mode: str, bm25: BM25Params) -> dict[str, Any]:
    """Keyword arguments a mode's ``build``/``load`` take from the index settings."""
    return {"params": bm25} if mode == "bm25" else {}


def _settings(manifest: Mapping[str, Any]) -> tuple[ChunkSpec, BM25Params]:
    chunk = ChunkSpec(**manifest["chunk"]) if "chunk" in manifest else ChunkSpec()
    bm25 = BM25Params(**manifest["bm25"]) if "bm25" in manifest else BM25Params()
    return chunk, bm25


def index_paths(
    paths: Sequence[str | os.PathLike[str]] = (),
    index: str | os.PathLike[str] | None = None,
    *,
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
) -> IndexReport:
    """Index files, folders or BEIR corpora into an index folder, redoing only what changed.

    Args:
        paths: Roots to scan; empty means the roots the index was built from.
        index: Index folder (default: ``$CTXSELECT_INDEX`` or ``./.ctxselect``).
        chunk: Chunking settings; default: the index's own, else ``ChunkSpec()``.
        bm25: BM25 settings; default: the index's own, else ``BM25Params()``.
        max_bytes: Files larger than this are skipped and counted.
        progress: Show progress bars on stderr.

    Returns:
        What changed. Documents whose content hash is unchanged are not touched; when
        nothing changed, nothing is written.
    """
    started = time.perf_counter()
    folder = resolve_index_dir(index)
    store = SQLiteStore(folder, create=True)
    try:
        manifest = store.read_manifest()
        roots = [str(Path(p).resolve()) for p in paths] or list(manifest.get("roots", []))
        if not roots:
            raise ConfigError(
                f"no paths to index and index {folder} has no roots yet: "
                f"run `ctxselect index PATH... --index {folder}`"
            )
        old_chunk, old_bm25 = _settings(manifest)
        chunk = chunk or old_chunk
        bm25 = bm25 or old_bm25
        chunker = _chunk.make_chunker(chunk)
        loaded = _ingest.load_paths(roots, max_bytes=max_bytes, progress=progress)
        settings_changed = "chunk" in manifest and (chunk != old_chunk or bm25 != old_bm25)
        changes = _ingest.diff_documents(store.doc_hashes(), loaded.documents)
        removed = list(changes.removed)
        # New chunking or BM25 settings invalidate every chunk: re-chunk all documents.
        updated = list(changes.modified) + (list(changes.unchanged) if settings_changed else [])
        unchanged = [] if settings_changed else list(changes.unchanged)
        wanted = set(changes.added) | set(updated)
        upserts = [d for d in loaded.documents if d.doc_id in wanted]
        modes = RETRIEVERS.names()
        complete = set(manifest.get("modes", [])) == set(modes)
        rebuilt = bool(upserts or removed or not complete)
        n_chunks = store.counts()["chunks"]
        if rebuilt:
            new_manifest = {
                "created": manifest.get("created", _now()),
                "updated": _now(),
                "roots": roots,
                "chunk": dataclasses.asdict(chunk),
                "bm25": dataclasses.asdict(bm25),
                "modes": modes,
                "default_mode": manifest.get("default_mode", DEFAULT_MODE),
            }
            builders = {
                mode: _builder(RETRIEVERS.get(mode), _retriever_params(mode, bm25))
                for mode in modes
            }
            n_chunks = write_changes(
                store,
                upserts=upserts,
                removed=removed,
                chunk=chunker.chunk,
                builders=builders,
                manifest=new_manifest,
                progress=progress,
            )
        report = loaded.report
        return IndexReport(
            index=folder,
            added=len(changes.added),
            updated=len(updated),
            removed=len(removed),
            unchanged=len(unchanged),
            documents=len(loaded.documents),
            chunks=n_chunks,
            rebuilt=rebuilt,
            seconds=round(time.perf_counter() - started, 3),
            skipped={
                "binary": report.binary,
                "empty": report.empty,
                "too_large": report.too_large,
                "unsupported": report.unsupported,
                "ignored": report.ignored,
                "decoded_with_replacement": report.decoded_with_replacement,
            },
            unreadable=tuple(report.unreadable),
            note="settings changed: every document was re-chunked" if settings_changed else "",
        )
    finally:
        store.close()


def _builder(cls: Any, params: Mapping[str, Any]) -> Any:
    def build(table: ChunkTable) -> Mapping[str, Any]:
        return cls.build(table, **params).arrays()

    return build


def open_index(index: str | os.PathLike[str] | None = None) -> Index:
    """Open an existing index folder for reading."""
    return Index(SQLiteStore(resolve_index_dir(index)))


def build_index(
    paths: Sequence[str | os.PathLike[str]],
    index: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Index:
    """Index ``paths`` (see :func:`index_paths`) and open the result."""
    report = index_paths(paths, index, **options)
    return open_index(report.index)


class Index:
    """An opened index: search, select, explain and inspect.

    The chunk table and each mode's artefacts are loaded once, on first use, so repeated
    queries never touch the disk.
    """

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.path = str(store.folder)
        self.manifest = store.read_manifest()
        self.chunk_spec, self.bm25 = _settings(self.manifest)
        self._table: ChunkTable | None = None
        self._retrievers: dict[str, Retriever] = {}

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def table(self) -> ChunkTable:
        """Every chunk as columns (loaded once)."""
        if self._table is None:
            self._table = self.store.chunk_table()
        return self._table

    def retriever(self, mode: str | None = None) -> Retriever:
        """Return the retriever for ``mode`` (default: the index's default mode)."""
        mode = mode or self.manifest.get("default_mode", DEFAULT_MODE)
        cls = RETRIEVERS.get(mode)
        if mode not in self._retrievers:
            arrays = self.store.read_arrays(mode)
            params = _retriever_params(mode, self.bm25)
            self._retrievers[mode] = cls.load(self.table, arrays, **params)
        return self._retrievers[mode]

    def search(self, query: str, k: int = DEFAULT_K, mode: str | None = None) -> list[Hit]:
        """Return the ``k`` best chunks for ``query``, best first."""
        return self.retriever(mode).search(query, k)

    def search_many(
        self, queries: Mapping[str, str], k: int = DEFAULT_K, mode: str | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}`` for every query."""
        return self.retriever(mode).search_many(queries, k)

    def explain(self, query: str, chunk_id: str, mode: str | None = None) -> Explanation:
        """Take the score of ``chunk_id`` for ``query`` apart, term by term."""
        return self.retriever(mode).explain(query, chunk_id)

    def explain_top(self, query: str, k: int = 3, mode: str | None = None) -> list[Explanation]:
        """Explain the ``k`` best chunks for ``query``."""
        return [self.explain(query, h.chunk_id, mode) for h in self.search(query, k, mode)]

    def select(
        self,
        query: str,
        budget: int,
        *,
        mode: str | None = None,
        packer: str = DEFAULT_PACKER,
        format: str = DEFAULT_FORMAT,
        k: int | None = None,
    ) -> Selection:
        """Fill ``budget`` tokens with the best chunks for ``query``, framing included.

        ``k`` bounds how many ranked chunks are considered (default: enough to fill the
        budget with chunks of the index's typical size, at least 50).
        """
        hits = self.search(query, k or self._depth_for(budget), mode)
        return self._packer(packer, format).pack(hits, budget)

    def render(self, selection: Selection, format: str | None = None) -> str:
        """Render a selection as the context block a prompt would contain.

        The default format is the one the selection was packed (and costed) in.
        """
        return _budget.render(selection, format)

    def _packer(self, name: str, format: str) -> Any:
        counter = _tokens.get_counter(self.chunk_spec.tokenizer)
        return _budget.make_packer(name, counter, format=format, span_text=self.store.span_text)

    def _depth_for(self, budget: int) -> int:
        sizes = self.table.n_tokens
        mean = max(1.0, sum(sizes) / len(sizes)) if sizes else 1.0
        return max(50, int(3 * budget / mean) + 1)

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Return one chunk by id."""
        return self.store.get_chunk(chunk_id)

    def get_document(self, doc_id: str) -> Document:
        """Return one document by id."""
        return self.store.get_document(doc_id)

    def info(self) -> IndexInfo:
        """Counts, size on disk and the settings the index was built with."""
        counts = self.store.counts()
        settings = {
            "chunk": self.manifest.get("chunk", {}),
            "bm25": self.manifest.get("bm25", {}),
            "default_mode": self.manifest.get("default_mode", DEFAULT_MODE),
            "roots": self.manifest.get("roots", []),
        }
        return IndexInfo(
            index=self.path,
            documents=counts["documents"],
            chunks=counts["chunks"],
            tokens=int(sum(self.table.n_tokens)),
            disk_bytes=self.store.disk_bytes(),
            schema_version=SCHEMA_VERSION,
            settings=settings,
            modes=tuple(self.manifest.get("modes", [])),
            created=str(self.manifest.get("created", "")),
            updated=str(self.manifest.get("updated", "")),
        )

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()


def names(kind: str) -> list[str]:
    """Return the valid registry names of ``kind``: chunker, tokenizer, mode, packer, format.

    The CLI and the MCP server list choices from here, so they never drift from the code.
    """
    registries: dict[str, Registry[Any]] = {
        "chunker": _chunk.CHUNKERS,
        "tokenizer": _tokens.TOKENIZERS,
        "mode": RETRIEVERS,
        "packer": _budget.PACKERS,
        "format": _budget.FORMATS,
    }
    if kind not in registries:
        raise UnknownNameError("registry", kind, registries)
    return registries[kind].names()


def chunk_file(path: str | os.PathLike[str], spec: ChunkSpec | None = None) -> list[Chunk]:
    """Load one file (or BEIR corpus) and return its chunks, without indexing."""
    loaded = _ingest.load_paths([path])
    chunker = _chunk.make_chunker(spec or ChunkSpec())
    return [c for doc in loaded.documents for c in chunker.chunk(doc)]


def retriever_for(chunks: Sequence[Chunk], mode: str, bm25: BM25Params | None = None) -> Retriever:
    """Build an in-memory retriever over ``chunks`` (used by experiments and tests)."""
    table = ChunkTable.from_chunks(list(chunks))
    cls = RETRIEVERS.get(mode)
    return cls.build(table, **_retriever_params(mode, bm25 or BM25Params()))


__all__ = [
    "Index",
    "build_index",
    "chunk_file",
    "index_paths",
    "names",
    "open_index",
    "retriever_for",
]

_ = _retrieve  # the import registers every retrieval mode

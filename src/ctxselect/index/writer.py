"""Write path: chunk changed documents and store them with fresh ranking artefacts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

from ctxselect.stores.base import Store
from ctxselect.types import Chunk, ChunkTable, Document

ChunkFn = Callable[[Document], list[Chunk]]
"""A chunker's ``chunk`` method; the api passes it in so index/ stays free of chunk/."""

BuildFn = Callable[[ChunkTable], Mapping[str, np.ndarray]]
"""Builds one retriever's arrays from the chunk table."""


def chunk_documents(
    documents: Sequence[Document], chunk: ChunkFn, *, progress: bool = False
) -> list[Chunk]:
    """Chunk every document, with a progress bar on stderr when asked."""
    chunks: list[Chunk] = []
    for doc in tqdm(documents, desc="chunking", unit="doc", disable=not progress):
        chunks.extend(chunk(doc))
    return chunks


def write_changes(
    store: Store,
    *,
    upserts: Sequence[Document],
    removed: Sequence[str],
    chunk: ChunkFn,
    builders: Mapping[str, BuildFn],
    manifest: Mapping[str, Any],
    progress: bool = False,
) -> int:
    """Store changed documents and rebuild every mode's artefacts in one transaction.

    Everything commits together, so a process killed half-way leaves the index as it
    was before. Returns the number of chunks the index holds afterwards.
    """
    chunks = chunk_documents(upserts, chunk, progress=progress)
    with store.transaction():
        store.write_documents(upserts, chunks, removed)
        table = store.chunk_table()
        for mode, build in builders.items():
            store.write_arrays(mode, build(table))
        store.write_manifest(manifest)
    return len(table)

"""Write path: chunk changed documents and commit them with their index segment.

An update analyzes only the chunks it adds (a delta segment of raw postings) and the
chunks it deletes (their terms, so document frequencies stay exact); nothing in it
grows with the corpus. A full build analyzes every chunk into a new base segment.
Retrieval modes are passed in as :class:`ModeOps` so this package never imports
``retrieve/`` (the facade, ``ctxselect.api.write``, builds them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from tqdm import tqdm

from ctxselect.index.merge import compact as compact_postings
from ctxselect.index.merge import merge_deltas as merge_postings
from ctxselect.stores.base import Store
from ctxselect.types import Chunk, Document

ChunkFn = Callable[[Document], list[Chunk]]
"""A chunker's ``chunk`` method; the facade passes it in so index/ stays free of chunk/."""

RawArrays = Mapping[str, np.ndarray]
"""A mode's raw arrays of some rows: for keyword modes the postings ``vocab``, ``indptr``,
``rows``, ``tfs``, ``lengths``; for dense, ``vectors`` and ``embedded``."""

CompactFn = Callable[[RawArrays, Sequence[RawArrays], np.ndarray, int], Mapping[str, np.ndarray]]
"""(base, deltas, new row of each global row or -1, live rows) -> raw arrays of the live rows."""


@dataclass(frozen=True, slots=True)
class ModeOps:
    """What the write path needs of one retrieval mode.

    Attributes:
        analysis: Names the text analysis; modes with equal names share one pass.
        analyze: Texts -> their raw postings (row i = text i).
        terms: One text -> its index terms, repeats kept (as ``analyze`` counts them).
        finish: Raw arrays of every live row, in chunk_id order -> the mode's stored
            base arrays (weights computed with the statistics of exactly those rows).
        compact: Base, deltas and the row mapping -> raw arrays of the live rows in their
            new order (default: merge postings, see ``index.merge``).
        merge: Delta segments -> one delta segment holding all their rows, in order.
        measured: After ``analyze``: manifest keys the analysis measured (the dense
            modes' embedding speed), recorded with the same commit; ``{}`` for none.
    """

    analysis: str
    analyze: Callable[[Sequence[str]], RawArrays]
    terms: Callable[[str], list[str]]
    finish: Callable[[RawArrays], Mapping[str, np.ndarray]]
    compact: CompactFn = compact_postings
    merge: Callable[[Sequence[RawArrays]], Mapping[str, np.ndarray]] = merge_postings
    measured: Callable[[], Mapping[str, Any]] = dict


def with_measured(manifest: Mapping[str, Any], modes: Mapping[str, ModeOps]) -> dict[str, Any]:
    """``manifest`` plus what the modes' analyses measured (call after ``analyze``)."""
    out = dict(manifest)
    for ops in modes.values():
        out.update(ops.measured())
    return out


def indexed_text(chunk: Chunk) -> str:
    """The text a keyword index sees for a chunk: header, then chunk text."""
    return f"{chunk.header}\n{chunk.text}" if chunk.header else chunk.text


def chunk_documents(
    documents: Sequence[Document], chunk: ChunkFn, *, progress: bool = False
) -> list[Chunk]:
    """Chunk every document, with a progress bar on stderr when asked."""
    chunks: list[Chunk] = []
    for doc in tqdm(documents, desc="chunking", unit="doc", disable=not progress):
        chunks.extend(chunk(doc))
    return chunks


class SharedTexts(Sequence[str]):
    """The indexed texts of a write's chunks, made on each access rather than held (a
    second copy of the corpus at a build's memory peak). ``memo`` lets analyses that start
    from the same words share that work (``ctxselect.retrieve._corpus``)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = chunks
        self.memo: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._chunks)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return list(map(indexed_text, self._chunks[i]))
        return indexed_text(self._chunks[i])

    def __iter__(self) -> Iterator[str]:
        return map(indexed_text, self._chunks)


def analyze(chunks: Sequence[Chunk], modes: Mapping[str, ModeOps]) -> dict[str, RawArrays]:
    """Return each mode's raw postings of ``chunks``; one pass per distinct analysis (and
    one word pass for the analyses that can share it)."""
    texts = SharedTexts(chunks)
    done: dict[str, RawArrays] = {}
    out: dict[str, RawArrays] = {}
    for mode, ops in modes.items():
        if ops.analysis not in done:
            done[ops.analysis] = ops.analyze(texts)
        out[mode] = done[ops.analysis]
    return out


def dead_terms(chunks: Sequence[Chunk], modes: Mapping[str, ModeOps]) -> dict[str, dict[str, int]]:
    """Return, per mode, how many of ``chunks`` hold each term (their df to subtract)."""
    done: dict[str, dict[str, int]] = {}
    out: dict[str, dict[str, int]] = {}
    for mode, ops in modes.items():
        if ops.analysis not in done:
            counts: Counter[str] = Counter()
            for c in chunks:
                counts.update(set(ops.terms(indexed_text(c))))
            done[ops.analysis] = dict(counts)
        out[mode] = done[ops.analysis]
    return out


def write_update(
    store: Store,
    *,
    upserts: Sequence[Document],
    removed: Sequence[str],
    chunks: Sequence[Chunk],
    modes: Mapping[str, ModeOps],
    manifest: Mapping[str, Any],
) -> int:
    """Commit changed documents as a delta segment; return the new generation.

    ``chunks`` are the new chunks of ``upserts``. The old chunks of ``upserts`` and of
    ``removed`` become dead rows; their terms are counted so every df stays exact.
    """
    doomed = [*removed, *(d.doc_id for d in upserts)]
    old = store.chunks_of(doomed) if doomed else []
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    arrays = analyze(ordered, modes) if ordered else {}
    return store.commit_update(
        documents=upserts,
        chunks=ordered,
        removed=removed,
        arrays=arrays,
        dead_terms=dead_terms(old, modes),
        manifest=with_measured(manifest, modes),
    )


def write_full(
    store: Store,
    *,
    documents: Sequence[Document],
    removed: Sequence[str],
    chunks: Sequence[Chunk],
    modes: Mapping[str, ModeOps],
    manifest: Mapping[str, Any],
) -> int:
    """Replace every chunk and the base segment (first build, changed settings).

    The new base is as compact as a compaction's, so the manifest's ``compacted`` time
    becomes this write's ``updated`` time (``info`` dates the last base by it).
    """
    ordered = sorted(chunks, key=lambda c: c.chunk_id)  # base rows are in chunk_id order
    raw = analyze(ordered, modes)
    finished = {mode: ops.finish(raw[mode]) for mode, ops in modes.items()}
    written = with_measured(manifest, modes)
    if written.get("updated"):
        written["compacted"] = written["updated"]
    return store.commit_update(
        documents=documents,
        chunks=ordered,
        removed=removed,
        arrays=finished,
        dead_terms={},
        manifest=written,
        rebuild=True,
    )

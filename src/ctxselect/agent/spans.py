"""Where chunks and lines lie in an index's documents, and the pieces built from them."""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence

from ctxselect.api.read import Index
from ctxselect.tool_results import ContextPiece, ContextReference
from ctxselect.types import ChunkTable, Hit, SelectedChunk, Selection

Fingerprint = tuple[str, int, int, int]
"""(doc_id, start, end, hash of text): a chunk's identity across re-indexing."""

_CACHED_DOCS = 64


class DocSpans:
    """Chunk positions and line numbers of one opened index (cached), and what uses them:
    the pieces, references and widened sections of a session-aware selection.

    The caches hold one generation of the index: when another process commits a new one
    (``ctxselect index`` beside a running server), the index's chunk table is replaced
    and the caches are dropped with it, so rows and lines are never read across versions.
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self._breaks: OrderedDict[str, list[int]] = OrderedDict()
        self._rows: dict[str, list[int]] | None = None
        self._table: ChunkTable | None = None

    def _current(self) -> ChunkTable:
        """The chunk table of the generation being read; the caches follow it."""
        table = self.index.table  # a new object exactly when a new generation is loaded
        if table is not self._table:
            self._table = table
            self._rows = None
            self._breaks.clear()
        return table

    def fingerprint(self, chunk_id: str) -> Fingerprint:
        """Return what identifies this version of a chunk's text."""
        table = self._current()
        row = table.row_of[chunk_id]
        return (table.doc_ids[row], table.starts[row], table.ends[row], hash(table.texts[row]))

    def _doc_rows(self, doc_id: str) -> list[int]:
        """The rows of ``doc_id``'s chunks, in text order (all documents mapped at once)."""
        table = self._current()
        if self._rows is None:
            rows: dict[str, list[int]] = {}
            for row, doc in enumerate(table.doc_ids):
                rows.setdefault(doc, []).append(row)
            for doc_rows in rows.values():
                doc_rows.sort(key=lambda r: table.starts[r])
            self._rows = rows
        return self._rows.get(doc_id, [])

    def covered(self, doc_id: str, start: int, end: int) -> tuple[str, ...]:
        """Return the ids of the chunks lying wholly inside ``[start, end)``, in order."""
        rows = self._doc_rows(doc_id)
        table = self._current()
        return tuple(
            table.chunk_ids[r]
            for r in rows
            if start <= table.starts[r] and table.ends[r] <= end and table.ends[r] > start
        )

    def chunks_of(self, doc_id: str) -> tuple[str, ...]:
        """Return the ids of ``doc_id``'s live chunks, in text order."""
        rows = self._doc_rows(doc_id)
        table = self._current()
        return tuple(table.chunk_ids[r] for r in rows)

    def lines(self, doc_id: str, start: int, end: int) -> tuple[int, int]:
        """Return the 1-based first and last line of ``[start, end)`` in the document."""
        self._current()
        breaks = self._breaks.get(doc_id)
        if breaks is None:
            text = self.index.get_document(doc_id).text
            breaks = [m.start() for m in re.finditer("\n", text)]
            self._breaks[doc_id] = breaks
            if len(self._breaks) > _CACHED_DOCS:
                self._breaks.popitem(last=False)
        first = bisect.bisect_left(breaks, start) + 1
        return first, bisect.bisect_left(breaks, max(start, end - 1)) + 1

    def reference(self, hit: Hit, call: int, resend: int) -> ContextReference:
        """A one-line reference to ``hit``, sent in ``call``; re-sending it costs ``resend``."""
        first, last = self.lines(hit.doc_id, hit.start, hit.end)
        # the chunk id names the document (``doc_id#n``); lines and call find the text
        text = f"already provided: chunk {hit.chunk_id} lines {first}-{last} in call {call}"
        tokens = self.index.count_tokens(text + "\n")
        saved = max(0, resend - tokens)
        return ContextReference(
            hit.chunk_id, hit.doc_id, hit.start, hit.end, first, last, hit.rank, call, tokens,
            saved, text,
        )  # fmt: skip

    def references(
        self, fresh: Selection, hits: Sequence[Hit], calls: Mapping[str, int], budget: int
    ) -> tuple[ContextReference, ...]:
        """References for the known chunks the plain selection would send, best first.

        ``calls`` maps each chunk the session has to the call that sent it.
        """
        by_id = {h.chunk_id: h for h in hits}
        ids = sorted(
            (c for piece in fresh.chunks for c in piece.chunk_ids if c in calls),
            key=lambda c: by_id[c].rank,
        )
        refs: list[ContextReference] = []
        for chunk_id in ids:
            hit = by_id[chunk_id]
            ref = self.reference(hit, calls[chunk_id], self.index.frame_tokens(hit))
            if sum(r.tokens for r in refs) + ref.tokens > budget:
                break
            refs.append(ref)
        return tuple(refs)

    def piece(self, chunk: SelectedChunk, *, with_text: bool) -> ContextPiece:
        """A selected piece with its lines and every chunk it covers."""
        first, last = self.lines(chunk.doc_id, chunk.start, chunk.end)
        ids = self.covered(chunk.doc_id, chunk.start, chunk.end) or chunk.chunk_ids
        return ContextPiece(
            ids, chunk.doc_id, chunk.start, chunk.end, first, last, chunk.header,
            round(chunk.score, 4), chunk.tokens, chunk.text if with_text else "",
        )  # fmt: skip

    def widen(self, hits: list[Hit], budget: int, known: Collection[str]) -> list[Hit]:
        """Replace hits by their enclosing sections (markdown ``parent_id``) where sensible.

        Walks the hits best first as the packer will, tracking the spans it would take.
        A hit is widened when its section adds text, holds no ``known`` chunk, overlaps no
        span taken before it, and still fits what is left of ``budget``; otherwise it
        stays as it is (a hit inside a section taken earlier is then dropped by the
        packer as an overlap: its text is already in).
        """
        out: list[Hit] = []
        taken: list[tuple[str, int, int]] = []
        left = budget
        for hit in hits:
            choice = hit
            wide = self._section(hit, known)
            if wide is not None and not _overlaps(taken, wide):
                cost = self.index.frame_tokens(wide)
                if cost <= left:
                    choice = wide
            out.append(choice)
            cost = self.index.frame_tokens(choice)
            if cost <= left and not _overlaps(taken, choice):
                taken.append((choice.doc_id, choice.start, choice.end))
                left -= cost
        return out

    def promote(self, selection: Selection, known: Collection[str]) -> Selection:
        """Promote sections as :meth:`Index.promote` does, except those holding ``known``.

        A section holding a chunk the session already has would send that chunk again,
        so its pieces stay as they were packed.
        """
        promoted = self.index.promote(selection)
        if promoted is selection:
            return promoted
        pieces: list[SelectedChunk] = []
        for piece in promoted.chunks:
            inside = self.covered(piece.doc_id, piece.start, piece.end)
            if piece in selection.chunks or not any(c in known for c in inside):
                pieces.append(piece)
                continue
            pieces.extend(  # the section's own pieces, as packed
                p
                for p in selection.chunks
                if p.doc_id == piece.doc_id and piece.start <= p.start and p.end <= piece.end
            )
        sent = {c for p in pieces for c in p.chunk_ids}
        return dataclasses.replace(
            promoted,
            chunks=tuple(pieces),
            tokens_used=sum(p.tokens for p in pieces),
            dropped=tuple(d for d in selection.dropped if d.chunk_id not in sent),
        )

    def _section(self, hit: Hit, known: Collection[str]) -> Hit | None:
        """The hit widened to its enclosing section, or None when that adds nothing."""
        span = parent_span(self.index.get_chunk(hit.chunk_id).parent_id)
        if span is None or any(c in known for c in self.covered(hit.doc_id, *span)):
            return None
        text = self.index.span_text(hit.doc_id, *span)
        if text.strip() == hit.text.strip():
            return None
        n_tokens = self.index.count_tokens(text)
        return dataclasses.replace(hit, start=span[0], end=span[1], text=text, n_tokens=n_tokens)


def line_ranges(index: Index, spans: Iterable[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """Return the 1-based first and last line of each ``(doc_id, start, end)`` span.

    The lines MCP results carry (``line_start``, ``line_end``), for other front ends.
    """
    doc_spans = DocSpans(index)
    return [doc_spans.lines(*span) for span in spans]


def _overlaps(taken: list[tuple[str, int, int]], hit: Hit) -> bool:
    return any(d == hit.doc_id and s < hit.end and hit.start < e for d, s, e in taken)


def parent_span(parent_id: str) -> tuple[int, int] | None:
    """Parse the markdown chunker's ``doc@start:end``; None when a chunk records no parent."""
    _, at, span = parent_id.rpartition("@")
    start, colon, end = span.partition(":")
    if not at or not colon or not (start.isdigit() and end.isdigit()):
        return None
    return int(start), int(end)

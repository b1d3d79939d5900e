"""Parent promotion: when enough children of one section are selected, send the section.

Several small chunks of one section read worse than the section itself, and often cost
about as much once each is framed (the "auto-merging" retrieval of LlamaIndex). After
packing, :func:`promote_parents` replaces the selected pieces lying inside a parent
section with that whole section when at least ``min_children`` of its chunks, and at
least ``min_share`` of them, were selected, and the selection still fits its budget.
"""

from __future__ import annotations

import re
from collections import Counter as Tally
from collections.abc import Mapping
from dataclasses import replace

from ctxselect.budget.base import Counter, SpanText
from ctxselect.budget.render import frame
from ctxselect.errors import ConfigError, InputError
from ctxselect.types import SelectedChunk, Selection

_PARENT = re.compile(r"^(?P<doc>.*)@(?P<start>\d+):(?P<end>\d+)$")
_ORDINAL = re.compile(r"#(\d+)$")


def parse_parent(parent_id: str) -> tuple[str, int, int]:
    """Split ``doc_id@start:end`` into its parts.

    Raises:
        InputError: ``parent_id`` is not in that form.
    """
    found = _PARENT.match(parent_id)
    if found is None:
        raise InputError(f"parent id {parent_id!r} is not of the form doc_id@start:end")
    return found["doc"], int(found["start"]), int(found["end"])


def _chunk_order(chunk_id: str) -> tuple[int, str]:
    found = _ORDINAL.search(chunk_id)
    return (int(found.group(1)) if found else -1, chunk_id)


def promote_parents(
    selection: Selection,
    parent_of: Mapping[str, str],
    span_text: SpanText,
    counter: Counter,
    *,
    min_children: int = 2,
    min_share: float = 0.5,
) -> Selection:
    """Replace selected children of a section by the whole section where it pays.

    A parent is promoted when at least ``min_children`` of its chunks, and at least
    ``min_share`` of all its chunks, are in the selection; when every selected piece
    touching its span lies wholly inside it; and when the selection with the parent in
    place of those pieces fits ``selection.budget``. Parents are tried in the order of
    their best selected child. The parent's piece takes the place of its first piece,
    lists every chunk of the section in ``chunk_ids``, and is costed framed, in the
    selection's format, exactly as a packer costs a piece.

    Args:
        selection: A packed selection (its ``format`` names the framing).
        parent_of: chunk_id -> parent_id (``doc_id@start:end``, as the markdown chunker
            sets ``Chunk.parent_id``) for every chunk of the index; chunks without a
            parent may be left out or map to "".
        span_text: ``(doc_id, start, end) -> text`` of a document span.
        counter: The token counter the selection was packed with.
        min_children: Selected chunks a section needs, at least 1.
        min_share: Share of the section's chunks that must be selected, from 0 to 1.

    Returns:
        A new selection; the same one when nothing is promoted. Dropped chunks that the
        promoted sections now contain leave ``dropped``.

    Raises:
        ConfigError: ``min_children`` < 1 or ``min_share`` outside [0, 1].
        InputError: A parent id is malformed.
    """
    if isinstance(min_children, bool) or not isinstance(min_children, int) or min_children < 1:
        raise ConfigError(f"min_children must be a whole number >= 1, got {min_children!r}")
    if not 0.0 <= min_share <= 1.0:
        raise ConfigError(f"min_share must be from 0 to 1, got {min_share}")
    children: dict[str, list[str]] = {}
    for chunk_id, parent in parent_of.items():
        if parent:
            children.setdefault(parent, []).append(chunk_id)
    pieces = list(selection.chunks)
    picked = Tally(parent_of.get(c, "") for p in pieces for c in dict.fromkeys(p.chunk_ids))
    used = selection.tokens_used
    for parent in _parents_in_order(pieces, parent_of):
        n = picked[parent]
        if n < min_children or n < min_share * len(children[parent]):
            continue
        promoted = _promote(pieces, parent, children[parent], span_text, counter, selection)
        if promoted is None:
            continue
        piece, inside = promoted
        delta = piece.tokens - sum(p.tokens for p in inside)
        if used + delta > selection.budget:
            continue
        first = pieces.index(inside[0])
        pieces = [p for p in pieces if not any(p is q for q in inside)]
        pieces.insert(first, piece)
        used += delta
    if used == selection.tokens_used and len(pieces) == len(selection.chunks):
        return selection
    covered = {c for p in pieces for c in p.chunk_ids}
    dropped = tuple(d for d in selection.dropped if d.chunk_id not in covered)
    return replace(selection, chunks=tuple(pieces), tokens_used=used, dropped=dropped)


def _parents_in_order(pieces: list[SelectedChunk], parent_of: Mapping[str, str]) -> list[str]:
    """Parents of the selected chunks, in selection order (a piece's order is its best)."""
    order: dict[str, None] = {}
    for piece in pieces:
        for chunk_id in piece.chunk_ids:
            parent = parent_of.get(chunk_id, "")
            if parent:
                order.setdefault(parent, None)
    return list(order)


def _promote(
    pieces: list[SelectedChunk],
    parent: str,
    members: list[str],
    span_text: SpanText,
    counter: Counter,
    selection: Selection,
) -> tuple[SelectedChunk, list[SelectedChunk]] | None:
    """Return the parent's piece and the pieces it replaces, or None if they straddle it."""
    doc_id, start, end = parse_parent(parent)
    touching = [p for p in pieces if p.doc_id == doc_id and p.start < end and start < p.end]
    inside = [p for p in touching if start <= p.start and p.end <= end]
    if not inside or len(inside) != len(touching):
        return None
    text = span_text(doc_id, start, end)
    header = inside[0].header
    framed = frame(doc_id, start, end, header, text, selection.format or "markdown")
    ids = set(members) | {c for p in inside for c in p.chunk_ids}
    piece = SelectedChunk(
        chunk_ids=tuple(sorted(ids, key=_chunk_order)),
        doc_id=doc_id,
        start=start,
        end=end,
        text=text,
        header=header,
        score=max(p.score for p in inside),
        n_tokens=int(counter.count(text)),
        tokens=int(counter.count(framed)),
    )
    return piece, inside

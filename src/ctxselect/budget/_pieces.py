"""The pieces of a selection being packed: overlap checks, neighbour merges and re-costing.

Private to the packers. A piece is a run of selected chunks of one document, framed once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ctxselect.budget.base import SpanText
from ctxselect.types import Hit

Cost = Callable[[str, int, int, str, str], int]
"""(doc_id, start, end, header, text) -> tokens of the framed piece."""


@dataclass(frozen=True, slots=True, eq=False)
class Piece:
    """Selected chunks of one document framed as one piece; ``members`` in document order.

    Each member is ``(position in the ranking, hit)``; the header is the first member's.
    """

    doc_id: str
    start: int
    end: int
    text: str
    header: str
    members: tuple[tuple[int, Hit], ...]
    tokens: int

    @property
    def best(self) -> int:
        """Ranking position of the best member (the piece's place in the selection)."""
        return min(pos for pos, _ in self.members)

    @property
    def score(self) -> float:
        """The best score among the members."""
        return max(hit.score for _, hit in self.members)


@dataclass(frozen=True, slots=True)
class Option:
    """One way to add a hit: the piece it makes, the pieces it replaces, the tokens added."""

    piece: Piece
    replaces: tuple[Piece, ...]
    delta: int


def _overlaps(start: int, end: int, other_start: int, other_end: int) -> bool:
    """Tell whether span [start, end) shares characters with, or lies inside, the other."""
    shared = start < other_end and other_start < end
    inside = other_start <= start and end <= other_end
    return shared or inside


class Pieces:
    """The pieces chosen so far and the tokens they use."""

    def __init__(self, cost: Cost, span_text: SpanText | None) -> None:
        self._cost = cost
        self._span_text = span_text
        self._by_doc: dict[str, list[Piece]] = {}
        self.used = 0

    def all(self) -> list[Piece]:
        """Every piece, in the order of each piece's best member."""
        return sorted((p for ps in self._by_doc.values() for p in ps), key=lambda p: p.best)

    def overlapped(self, hit: Hit) -> str | None:
        """Return the id of a selected chunk whose piece ``hit`` overlaps, or None."""
        for piece in self._by_doc.get(hit.doc_id, ()):
            if _overlaps(hit.start, hit.end, piece.start, piece.end):
                for _, member in piece.members:
                    if _overlaps(hit.start, hit.end, member.start, member.end) or _overlaps(
                        member.start, member.end, hit.start, hit.end
                    ):
                        return member.chunk_id
                # The hit lies in whitespace between merged members.
                return piece.members[0][1].chunk_id
        return None

    def options(self, pos: int, hit: Hit, alone: int, merge: bool) -> list[Option]:
        """List the ways to add ``hit``: alone, and merged with touching neighbours."""
        single = Piece(hit.doc_id, hit.start, hit.end, hit.text, hit.header, ((pos, hit),), alone)
        result = [Option(single, (), alone)]
        if not merge:
            return result
        left, left_gap, right, right_gap = self._neighbours(hit)
        for use_left, use_right in ((True, True), (True, False), (False, True)):
            if (use_left and left is None) or (use_right and right is None):
                continue
            before: list[Piece | str] = [left, left_gap] if use_left and left else []
            after: list[Piece | str] = [right_gap, right] if use_right and right else []
            piece = self._join([*before, single, *after])
            replaces = tuple(p for p in (before + after) if isinstance(p, Piece))
            result.append(Option(piece, replaces, piece.tokens - sum(p.tokens for p in replaces)))
        return result

    def add(self, option: Option) -> None:
        """Put ``option``'s piece in place of the pieces it replaces."""
        doc = self._by_doc.setdefault(option.piece.doc_id, [])
        for old in option.replaces:
            doc.remove(old)
        doc.append(option.piece)
        self.used += option.delta

    def _neighbours(self, hit: Hit) -> tuple[Piece | None, str, Piece | None, str]:
        """Return the pieces just before and after ``hit`` that it may merge with, and gaps."""
        left: Piece | None = None
        right: Piece | None = None
        for piece in self._by_doc.get(hit.doc_id, ()):
            if piece.end <= hit.start and (left is None or piece.end > left.end):
                left = piece
            if piece.start >= hit.end and (right is None or piece.start < right.start):
                right = piece
        if right is left:  # an empty span on both sides: merge once
            right = None
        left_gap = self._gap(hit.doc_id, left.end, hit.start) if left is not None else None
        right_gap = self._gap(hit.doc_id, hit.end, right.start) if right is not None else None
        return (
            left if left_gap is not None else None,
            left_gap or "",
            right if right_gap is not None else None,
            right_gap or "",
        )

    def _gap(self, doc_id: str, end: int, start: int) -> str | None:
        """Return the text between two spans if they may merge (touch, or whitespace only)."""
        if end == start:
            return ""
        if self._span_text is None:
            return None
        gap = self._span_text(doc_id, end, start)
        return gap if gap.isspace() else None

    def _join(self, parts: list[Piece | str]) -> Piece:
        """Merge pieces (with the gap text between them) into one piece and re-cost it."""
        pieces = [p for p in parts if isinstance(p, Piece)]
        first, last = pieces[0], pieces[-1]
        text = "".join(p.text if isinstance(p, Piece) else p for p in parts)
        members = tuple(m for p in pieces for m in p.members)
        tokens = self._cost(first.doc_id, first.start, last.end, first.header, text)
        return Piece(first.doc_id, first.start, last.end, text, first.header, members, tokens)

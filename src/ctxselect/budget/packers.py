"""Packers: fill a token budget with the best ranked chunks, framing included.

``skip`` (the default) goes past a chunk that does not fit to smaller ones below it;
``greedy`` (the chapter's packer) stops at the first chunk that does not fit. Both drop
repeated chunk ids and chunks overlapping what is already selected, and merge chunks
that are neighbours in their document into one piece, framed once.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

from ctxselect.budget._pieces import Option, Piece, Pieces
from ctxselect.budget.base import PACKERS, Counter, Packer, SpanText
from ctxselect.budget.render import FORMATS
from ctxselect.config import DEFAULT_FORMAT
from ctxselect.errors import ConfigError, InputError
from ctxselect.types import DroppedChunk, Hit, SelectedChunk, Selection

OPTIONS = ("format", "dedup", "merge", "span_text")
"""Keyword options every packer takes besides the counter."""

GREEDY_STOPPED = "greedy: stopped at the first chunk that did not fit"


def check_budget(budget: object) -> int:
    """Return ``budget`` as an int, or raise ConfigError if it is not a count >= 0."""
    if isinstance(budget, bool):
        raise ConfigError(f"budget must be a number of tokens >= 0, got {budget!r}")
    try:
        value = operator.index(budget)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(f"budget must be a whole number of tokens >= 0, got {budget!r}") from None
    if value < 0:
        raise ConfigError(f"budget must be a number of tokens >= 0, got {value}")
    return value


class _BasePacker:
    """Shared packing loop; subclasses say whether a chunk that does not fit stops it.

    Selection order is the ranking order of each piece's best chunk (its position in
    ``hits``); inside a piece, chunk ids are in document order. A chunk's cost is the
    token count of its whole framed piece in ``counter`` (exact for any counter, no
    assumption that framing and text counts add up). A merged piece is re-costed as a
    whole and only chosen if that cost fits: among adding the chunk alone or merged with
    the selected piece just before and/or after it, the packer takes the option that adds
    the fewest tokens (ties: the one that merges more).
    """

    name = ""
    stops_at_misfit = False

    def __init__(
        self,
        counter: Counter,
        format: str = DEFAULT_FORMAT,
        dedup: bool = True,
        merge: bool = True,
        span_text: SpanText | None = None,
    ) -> None:
        """Set up a packer.

        Args:
            counter: A token counter: any object with ``count(text) -> int``.
            format: Context format the pieces are costed in (a name in ``FORMATS``).
            dedup: Drop chunks that overlap an already selected span of their document.
            merge: Merge neighbouring chunks of one document into one piece.
            span_text: ``(doc_id, start, end) -> text`` of the document; with it, chunks
                separated only by whitespace merge too, not just chunks that touch.

        Raises:
            ConfigError: The counter has no ``count`` method or span_text is not callable.
            UnknownNameError: ``format`` is not a registered format.
        """
        if not callable(getattr(counter, "count", None)):
            raise ConfigError(
                f"a packer needs a token counter with count(text) -> int, got "
                f"{type(counter).__name__}: pass one from ctxselect.tokens"
            )
        if span_text is not None and not callable(span_text):
            raise ConfigError("span_text must be a function (doc_id, start, end) -> str")
        self.counter = counter
        self.format = FORMATS.check(format)
        self.dedup = dedup
        self.merge = merge
        self.span_text = span_text
        self._framer = FORMATS.get(format)

    def pack(self, hits: Sequence[Hit], budget: int) -> Selection:
        """Return the selection of ``hits`` (best first) that fits ``budget`` tokens.

        Args:
            hits: Ranked hits, best first.
            budget: Tokens the rendered context may use, framing included.

        Returns:
            The selection; every hit is either in one piece's ``chunk_ids`` or in
            ``dropped`` with its reason, exactly once.

        Raises:
            ConfigError: ``budget`` is negative or not a whole number.
            InputError: A hit's span ends before it starts.
        """
        budget = check_budget(budget)
        hits = list(hits)
        if not hits:
            return Selection((), 0, budget, (), self.name, "no hits", self.format)
        cache: dict[str, int] = {}
        pieces = Pieces(lambda *piece: self._cost(cache, *piece), self.span_text)
        dropped: list[DroppedChunk] = []
        seen: dict[str, int] = {}
        stopped_at: Hit | None = None
        alone_costs: list[int] = []
        for pos, hit in enumerate(hits):
            _check_hit(hit)
            alone = self._cost(cache, hit.doc_id, hit.start, hit.end, hit.header, hit.text)
            alone_costs.append(alone)
            reason = self._reject(hit, stopped_at, seen, pieces)
            seen.setdefault(hit.chunk_id, hit.rank)
            if reason is None:
                best = self._best_option(pieces, pos, hit, alone)
                left = budget - pieces.used
                if best.delta <= left:
                    pieces.add(best)
                    continue
                reason = f"does not fit: needs {best.delta} tokens, {left} left"
                if self.stops_at_misfit:
                    stopped_at = hit
            dropped.append(DroppedChunk(hit.chunk_id, hit.doc_id, alone, reason))
        chosen = pieces.all()
        note = "" if chosen else self._empty_note(budget, min(alone_costs), stopped_at, hits)
        return Selection(
            tuple(self._selected(p) for p in chosen),
            pieces.used,
            budget,
            tuple(dropped),
            self.name,
            note,
            self.format,
        )

    def _reject(
        self, hit: Hit, stopped_at: Hit | None, seen: dict[str, int], pieces: Pieces
    ) -> str | None:
        """Return why ``hit`` is dropped before its cost is weighed, or None."""
        if stopped_at is not None:
            return f"{GREEDY_STOPPED} ({stopped_at.chunk_id})"
        if hit.chunk_id in seen:
            return f"duplicate: {hit.chunk_id} already appeared at rank {seen[hit.chunk_id]}"
        if self.dedup:
            other = pieces.overlapped(hit)
            if other is not None:
                return f"overlaps {other}"
        return None

    def _best_option(self, pieces: Pieces, pos: int, hit: Hit, alone: int) -> Option:
        """Pick the option adding the fewest tokens; on a tie, the one merging more."""
        options = pieces.options(pos, hit, alone, self.merge)
        return min(options, key=lambda o: (o.delta, -len(o.replaces)))

    def _cost(
        self, cache: dict[str, int], doc_id: str, start: int, end: int, header: str, text: str
    ) -> int:
        """Count the tokens of a framed piece, remembering counts of pieces seen before."""
        piece = self._framer(doc_id, start, end, header, text)
        tokens = cache.get(piece)
        if tokens is None:
            tokens = int(self.counter.count(piece))
            cache[piece] = tokens
        return tokens

    def _selected(self, piece: Piece) -> SelectedChunk:
        return SelectedChunk(
            chunk_ids=tuple(hit.chunk_id for _, hit in piece.members),
            doc_id=piece.doc_id,
            start=piece.start,
            end=piece.end,
            text=piece.text,
            header=piece.header,
            score=piece.score,
            n_tokens=int(self.counter.count(piece.text)),
            tokens=piece.tokens,
            p_relevant=_best_p(hit.p_relevant for _, hit in piece.members),
        )

    def _empty_note(
        self, budget: int, smallest: int, stopped_at: Hit | None, hits: list[Hit]
    ) -> str:
        """Say why nothing was selected."""
        if budget < smallest:
            return f"budget {budget} is smaller than the smallest framed chunk ({smallest} tokens)"
        if stopped_at is not None:
            return (
                f"greedy: the best chunk {stopped_at.chunk_id} does not fit in budget {budget}; "
                f"the skip packer would go on to smaller chunks"
            )
        return f"none of the {len(hits)} hits fit in budget {budget}"


def _best_p(values: Iterable[float | None]) -> float | None:
    known = [p for p in values if p is not None]
    return max(known) if known else None


def _check_hit(hit: Hit) -> None:
    if hit.end < hit.start:
        raise InputError(
            f"hit {hit.chunk_id!r} has start {hit.start} after end {hit.end}: "
            f"spans must satisfy start <= end"
        )


@PACKERS.register("greedy")
class GreedyPacker(_BasePacker):
    """The chapter's packer: take chunks best first, stop at the first that does not fit.

    Chunks after the stop are dropped with the reason ``greedy: stopped at the first
    chunk that did not fit (<chunk_id>)``. Selection order: ranking order of each piece's
    best chunk.
    """

    name = "greedy"
    stops_at_misfit = True


@PACKERS.register("skip")
class SkipPacker(_BasePacker):
    """Take chunks best first, going past a chunk that does not fit to smaller ones.

    Selection order: ranking order of each piece's best chunk. On the same hits it
    selects every chunk the greedy packer selects, and maybe more.
    """

    name = "skip"
    stops_at_misfit = False


def make_packer(name: str, counter: Counter, **options: object) -> Packer:
    """Build the packer registered as ``name``.

    Args:
        name: A packer name (``skip``, ``greedy``).
        counter: A token counter: any object with ``count(text) -> int``.
        **options: ``format``, ``dedup``, ``merge``, ``span_text`` (see the packers).

    Raises:
        UnknownNameError: ``name`` or the format is not registered.
        ConfigError: An option is not one a packer takes.
    """
    factory = PACKERS.get(name)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigError(
            f"unknown packer option(s) {', '.join(unknown)}: choose from {', '.join(OPTIONS)}"
        )
    return factory(counter, **options)

"""New material for a session: what a plain selection wants that the session lacks.

A session's selection goes through :meth:`ctxselect.api.Index.select`, so the session
stops where a session-less ``select`` stops: chunks the session already has come back as
references, and the budget they free buys only chunks that ``select`` itself would have
chosen with that much more budget, never lower-ranked filler past its stopping point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ctxselect.agent.spans import DocSpans
from ctxselect.api.read import Index
from ctxselect.budget.stop import BUDGET_FULL, DEFAULT_STOP
from ctxselect.types import Filter, Hit, Selection


@dataclass(frozen=True, slots=True)
class Ask:
    """One selection request: the query, how to rank for it (``k`` chunks deep, only
    the documents ``filter`` keeps), and where to stop (``Index.select``'s ``stop``)."""

    query: str
    mode: str
    k: int
    mmr: float | None
    stop: str | float = DEFAULT_STOP
    filter: Filter = field(default_factory=Filter)

    def rank(self, index: Index) -> list[Hit]:
        """The ranking a session-less ``select`` makes for this request (filtered too)."""
        f = self.filter
        return index.rank(
            self.query,
            self.k,
            self.mode,
            mmr=self.mmr,
            include=f.include,
            exclude=f.exclude,
            where=f.where,
        )

    def select(self, index: Index, hits: Sequence[Hit], budget: int) -> Selection:
        """What a session-less ``select`` chooses from ``hits`` (:meth:`rank`) in ``budget``."""
        return index.select_ranked(hits, budget, mode=self.mode, stop=self.stop)


def new_material(
    spans: DocSpans,
    ask: Ask,
    hits: Sequence[Hit],
    known: Collection[str],
    left: int,
    *,
    received: Collection[str],
    detail: str,
    promote: bool,
) -> Selection:
    """Pack into ``left`` tokens the chunks a plain selection wants that are not ``known``.

    The plain selection gets ``left`` plus what the ``known`` hits would cost (they come
    back as references instead); of what it chose, the chunks the session lacks are
    packed, widened first for ``detail="full"`` (sections holding no ``received`` chunk)
    and promoted if asked. Ranked chunks it left out stay out, with its reasons.
    ``Selection.stop`` is ``budget full`` when a wanted chunk did not fit ``left``, else
    why the plain selection stopped.
    """
    index = spans.index
    spare = sum(index.frame_tokens(h) for h in hits if h.chunk_id in known)
    wanted = ask.select(index, hits, left + spare)
    chosen = {c for piece in wanted.chunks for c in piece.chunk_ids}
    candidates = [h for h in hits if h.chunk_id in chosen and h.chunk_id not in known]
    if detail == "full":
        candidates = spans.widen(candidates, left, received)
    selection = index.pack(candidates, left)
    if promote:
        selection = spans.promote(selection, received)
    left_out = tuple(d for d in wanted.dropped if d.chunk_id not in known)
    full = any(d.reason.startswith("does not fit") for d in selection.dropped)
    return dataclasses.replace(
        selection,
        dropped=selection.dropped + left_out,
        stop=BUDGET_FULL if full else wanted.stop,
        threshold=wanted.threshold,
    )

"""What a session remembers: each chunk it received, in which call, and which version.

A chunk counts as received only while its text is the version that was sent (its
:data:`~ctxselect.agent.spans.Fingerprint`), so a chunk changed by re-indexing is new
material again. :class:`~ctxselect.agent.sessions.Sessions` keeps one
:class:`SessionState` per session key and forgets the least recently used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxselect.agent.grep_session import Grepped
from ctxselect.agent.spans import DocSpans, Fingerprint
from ctxselect.types import Hit


@dataclass(frozen=True, slots=True)
class Delivered:
    """A chunk a session received: in which call, and which version of its text."""

    call: int
    fingerprint: Fingerprint


@dataclass(slots=True)
class SessionState:
    """One session: its calls, the tokens its results cost, the chunks and blocks it got."""

    calls: int = 0
    tokens: int = 0
    delivered: dict[str, Delivered] = field(default_factory=dict)
    grepped: Grepped = field(default_factory=dict)

    def has(self, spans: DocSpans, chunk_id: str) -> bool:
        """Whether the session received this version of a live chunk."""
        seen = self.delivered.get(chunk_id)
        return seen is not None and seen.fingerprint == spans.fingerprint(chunk_id)

    def known(self, spans: DocSpans, hits: Sequence[Hit]) -> dict[str, Delivered]:
        """Hits the session received whose text has not changed since."""
        ids = [h.chunk_id for h in hits if self.has(spans, h.chunk_id)]
        return {c: self.delivered[c] for c in ids}

    def received(self, spans: DocSpans) -> set[str]:
        """Every live chunk the session received whose text has not changed since."""
        live = spans.index.table.row_of
        return {c for c in self.delivered if c in live and self.has(spans, c)}

    def deliver(
        self,
        spans: DocSpans,
        call: int,
        tokens: int,
        sent: Sequence[tuple[str, int, int]],
        ids: Sequence[str] = (),
    ) -> None:
        """Record a call: its size, and every chunk inside ``sent`` or in ``ids`` as received."""
        self.calls = call
        self.tokens += tokens
        chunk_ids = [c for span in sent for c in spans.covered(*span)]
        for chunk_id in dict.fromkeys([*chunk_ids, *ids]):
            self.delivered[chunk_id] = Delivered(call, spans.fingerprint(chunk_id))

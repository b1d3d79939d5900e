"""What a session remembers: each chunk it received, in which call, and which version.

A chunk counts as received while its text is a version that was sent: the same chunk
unchanged (its :data:`~ctxselect.agent.spans.Fingerprint`), or any chunk of the same
document with exactly the text the session received. So a chunk changed by re-indexing is
new material again, while one that only moved (a line added above it, a chunk split off
before it) is not sent twice. :class:`~ctxselect.agent.sessions.Sessions` keeps one
:class:`SessionState` per session key and forgets the least recently used, and any
idle for :data:`IDLE_SECONDS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxselect.agent.grep_session import Grepped
from ctxselect.agent.limits import MAX_SESSIONS
from ctxselect.agent.spans import DocSpans, Fingerprint
from ctxselect.errors import ConfigError
from ctxselect.types import Hit

IDLE_SECONDS = 3600.0
"""A session idle this long is forgotten; its next call is answered as a new session's."""


@dataclass(frozen=True, slots=True)
class Delivered:
    """A chunk a session received: in which call, and which version of its text."""

    call: int
    fingerprint: Fingerprint


@dataclass(slots=True)
class SessionState:
    """One session: its calls, the tokens its results cost, the chunks and blocks it got,
    and when it was last used (the clock of :class:`~ctxselect.agent.sessions.Sessions`).

    ``delivered`` maps each chunk id sent to when and which version; ``texts`` maps each
    (document, hash of a chunk's text) sent to when, so a chunk with another id or other
    offsets but that text is known too.
    """

    calls: int = 0
    tokens: int = 0
    delivered: dict[str, Delivered] = field(default_factory=dict)
    texts: dict[tuple[str, int], Delivered] = field(default_factory=dict)
    grepped: Grepped = field(default_factory=dict)
    used_at: float = 0.0

    def copy(self) -> SessionState:
        """A copy whose changes leave this state as it is."""
        return dataclasses.replace(
            self, delivered=dict(self.delivered), texts=dict(self.texts), grepped=dict(self.grepped)
        )

    def sent(self, spans: DocSpans, chunk_id: str) -> Delivered | None:
        """When the session received the current text of live chunk ``chunk_id`` (None:
        it did not, or the text changed since)."""
        now = spans.fingerprint(chunk_id)
        seen = self.delivered.get(chunk_id)
        if seen is not None and seen.fingerprint == now:
            return seen
        return self.texts.get((now[0], now[3]))

    def has(self, spans: DocSpans, chunk_id: str) -> bool:
        """Whether the session received the current text of a live chunk."""
        return self.sent(spans, chunk_id) is not None

    def known(self, spans: DocSpans, hits: Sequence[Hit]) -> dict[str, Delivered]:
        """Hits whose current text the session received, and when."""
        found = {h.chunk_id: self.sent(spans, h.chunk_id) for h in hits}
        return {c: seen for c, seen in found.items() if seen is not None}

    def received(self, spans: DocSpans) -> dict[str, Delivered]:
        """Every live chunk whose current text the session received, and when."""
        live = spans.index.table.row_of
        ids = [c for c in self.delivered if c in live]
        docs = {doc for doc, _ in self.texts}
        ids += [c for doc in docs for c in spans.chunks_of(doc)]
        found = {c: self.sent(spans, c) for c in dict.fromkeys(ids)}
        return {c: seen for c, seen in found.items() if seen is not None}

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
            made = Delivered(call, spans.fingerprint(chunk_id))
            self.delivered[chunk_id] = made
            self.texts[(made.fingerprint[0], made.fingerprint[3])] = made


def check_limits(max_sessions: int, idle_seconds: float | None) -> tuple[int, float | None]:
    """Return the session limits if valid, else raise ConfigError."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ConfigError(
            f"max_sessions must be a whole number of at least 1, got {max_sessions!r}: pass "
            f"how many sessions to remember at once (default {MAX_SESSIONS})"
        )
    number = isinstance(idle_seconds, int | float) and not isinstance(idle_seconds, bool)
    if idle_seconds is not None and not (number and idle_seconds > 0):
        raise ConfigError(
            f"idle_seconds must be above 0, got {idle_seconds!r}: pass how long an idle "
            f"session is remembered (default {IDLE_SECONDS:g}), or None to keep it until "
            f"max_sessions evicts it"
        )
    return max_sessions, idle_seconds

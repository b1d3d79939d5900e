"""Sessions: the read path of one index, remembering what each session received."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ctxselect import api
from ctxselect.agent import limits, lookups, roots
from ctxselect.agent.grep import GrepResult, scan_index
from ctxselect.agent.grep_session import grep_in_session
from ctxselect.agent.loading import (
    Generation,
    changed_while_read,
    generation_of,
    load_index,
    same_generation,
)
from ctxselect.agent.material import Ask
from ctxselect.agent.memory import SessionState, check_limits
from ctxselect.agent.passages import read_passage
from ctxselect.agent.results import Meter, received_as
from ctxselect.agent.select_session import search_context, select_context
from ctxselect.agent.spans import DocSpans
from ctxselect.api.filters import make_filter
from ctxselect.errors import ConfigError, IndexLockedError
from ctxselect.tool_results import ContextResult, Passage, SearchResult
from ctxselect.types import Explanation, IndexInfo, WriteResult

V = TypeVar("V")


class Sessions:
    """Session-aware reads of one index, bounded by a result cap, safe across threads.

    A session is any string key (the MCP server uses one per client connection); None
    means "no session": nothing is remembered. Every method that returns text records
    the chunks it sent, so later calls send references instead. A call that overlaps a
    commit of the index (rows read before it, looked up after) runs once more on the new
    generation, on a copy of the session's memory, so the memory never mixes the two;
    IndexLockedError if the index changed during that run too.

    Args:
        index: An opened index; the write methods replace it with a reloaded one.
        max_result_tokens: No result, as ``serialize`` renders it, exceeds this many
            tokens of the index's tokenizer.
        serialize: The text a result reaches the caller as (default: indented JSON), except
            ``select``'s, which is always its text block plus compact metadata
            (:func:`ctxselect.agent.results.context_wire`).
        max_sessions: Sessions remembered at once; the least recently used is forgotten.
        idle_seconds: A session with no call for this long is forgotten (None: never).
        clock: Seconds, for idle times (tests pass a fake one).
    """

    def __init__(
        self,
        index: api.Index,
        *,
        max_result_tokens: int = limits.DEFAULT_MAX_RESULT_TOKENS,
        serialize: Callable[[object], str] | None = None,
        max_sessions: int = limits.MAX_SESSIONS,
        idle_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index = index
        self.max_result_tokens = limits.check_max_result_tokens(max_result_tokens)
        self.max_sessions, self.idle_seconds = check_limits(max_sessions, idle_seconds)
        self._clock = clock
        wire = received_as(serialize or limits.to_json)
        self.meter = Meter(self._count, wire, self.max_result_tokens)
        self.spans = DocSpans(index)
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.RLock()
        # indexes a scan outside the lock still reads (by id), and those replaced meanwhile,
        # closed when their last scan ends
        self._scans: Counter[int] = Counter()
        self._retired: dict[int, api.Index] = {}

    @classmethod
    def open(cls, index: str | os.PathLike[str] | None, **options: Any) -> Sessions:
        """Open an index folder and load it now, so a missing or damaged one fails here.

        Raises:
            IndexNotFoundError: No index at ``index``.
            IndexCorruptError: The index cannot be read.
        """
        opened = load_index(index)
        try:
            return cls(opened, **options)
        except BaseException:
            opened.close()
            raise

    @property
    def default_mode(self) -> str:
        """The retrieval mode used when a call names none."""
        return self.index.settings.default_mode

    def close(self) -> None:
        """Close the index (a replaced one still scanned closes when its scan ends)."""
        with self._lock:
            self.index.close()

    def _count(self, text: str) -> int:
        return self.index.count_tokens(text)

    def select(
        self,
        session: str | None,
        query: str,
        budget: int = limits.DEFAULT_BUDGET,
        *,
        mode: str | None = None,
        detail: str = "snippets",
        refresh: bool = False,
        mmr: float | None = None,
        promote: bool = False,
        stop: str | float = api.DEFAULT_STOP,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        where: Sequence[str] | None = None,
    ) -> ContextResult:
        """Select the best context for ``query`` within ``budget`` tokens, minus repeats.

        Chunks the session already has, that the plain selection would include, come back
        as references; the budget they would have used goes to chunks the session lacks
        that a plain selection with that much more budget would choose (see
        :func:`ctxselect.agent.material.new_material`), never past where
        ``Index.select`` stops.
        ``detail``: ``snippets`` (the chunks, adjacent ones merged), ``full`` (each chunk
        widened to its enclosing section when that fits), ``ids`` (ids, spans and costs
        only; nothing counts as received). ``refresh`` sends repeats again. ``mmr``
        reorders the ranked chunks by maximal marginal relevance with that λ (see
        :meth:`ctxselect.api.Index.rank`); ``promote`` sends a whole section for its
        selected chunks (see :meth:`ctxselect.api.Index.promote`), never one holding a
        chunk the session already has. ``stop`` is :meth:`ctxselect.api.Index.select`'s:
        ``auto``, ``none`` or a P(relevant) threshold. ``include``, ``exclude`` and
        ``where`` filter the ranking as :meth:`ctxselect.api.Index.search` does; when
        they leave nothing, the note says which filter did it.

        Raises:
            ConfigError: Bad query, budget, detail, mmr or stop, mmr on an index without
                dense vectors, or a P threshold without calibration; UnknownNameError: bad
                mode.
        """
        limits.check_query(query)
        limits.check_budget(budget, self.max_result_tokens)
        limits.check_detail(detail)
        limits.check_mmr(mmr)
        filter = make_filter(include, exclude, where)
        with self._lock:
            mode = self._mode(mode, mmr)
            stop = lookups.check_stop(self.index, mode, stop)
            ask = Ask(query, mode, self.index.depth(budget), mmr, stop, filter)
            return self._answer(session, lambda state: select_context(
                self.spans, self.meter, state, ask, budget,
                detail=detail, refresh=refresh, promote=promote,
            ))  # fmt: skip

    def search(
        self,
        session: str | None,
        query: str,
        k: int = limits.DEFAULT_SEARCH_K,
        mode: str | None = None,
        *,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        where: Sequence[str] | None = None,
    ) -> SearchResult:
        """Rank chunks for ``query``: the ``k`` best, ones the session has as references;
        ``include``/``exclude``/``where`` filter as :meth:`ctxselect.api.Index.search`."""
        limits.check_query(query)
        limits.check_k(k)
        filter = make_filter(include, exclude, where)
        with self._lock:
            mode = self._mode(mode)
            find = functools.partial(search_context, self.spans, self.meter)
            return self._answer(session, lambda state: find(state, query, k, mode, filter))

    def grep(self, session: str | None, pattern: str, **options: Any) -> GrepResult:
        """Grep as :func:`~ctxselect.agent.grep.grep_index`; blocks the session has come back
        as references, blocks sent count as received (:mod:`~ctxselect.agent.grep_session`).

        The scan (up to :data:`~ctxselect.agent.grep.TIME_LIMIT` seconds) runs outside the
        lock, so other calls go on meanwhile; only fitting it to the session takes the
        lock. A scan that an index write overlapped (its documents may mix two versions)
        is run again on the new index, once.

        Raises:
            ConfigError: As :func:`~ctxselect.agent.grep.grep_index`, or a budget above
                the cap; IndexLockedError: the index changed during both scans.
        """
        limits.check_budget(options.get("budget", limits.DEFAULT_BUDGET), self.max_result_tokens)
        for _ in range(2):
            with self._scanning() as index:
                begun = generation_of(index)
                scan = scan_index(index, pattern, **options)  # the slow part: no lock held
                with self._lock:
                    fit = functools.partial(grep_in_session, self.spans, self.meter, scan=scan)
                    found = self._attempt(session, fit, begun) if index is self.index else []
                    if found:
                        return found[0]
        raise IndexLockedError(changed_while_read(self.index, "grep"))

    @contextlib.contextmanager
    def _scanning(self) -> Iterator[api.Index]:
        """The current index, kept open for a read outside the lock even if replaced."""
        with self._lock:
            index = self.index
            self._scans[id(index)] += 1
        try:
            yield index
        finally:
            with self._lock:
                self._scans[id(index)] -= 1
                if not self._scans[id(index)]:
                    del self._scans[id(index)]
                    if self._retired.pop(id(index), None) is not None:
                        index.close()

    def get_chunk(self, session: str | None, chunk_id: str) -> Passage:
        """Return one chunk's text, even if the session has it (it was asked for by id).

        Raises:
            NotFoundError: No such chunk.
        """
        limits.check_id("chunk id", chunk_id)

        def read(state: SessionState) -> Passage:
            chunk = lookups.find_chunk(self.index, chunk_id)
            seen = state.sent(self.spans, chunk_id)
            note = f"already provided in call {seen.call}; sent again as asked" if seen else ""
            size = len(self.index.get_document(chunk.doc_id).text)
            span = (chunk.start, chunk.end)
            return read_passage(
                self.spans, self.meter, state, chunk.doc_id, span, size, chunk.header, note
            )

        with self._lock:
            return self._answer(session, read)

    def get_document(
        self, session: str | None, doc_id: str, start: int = 0, end: int | None = None
    ) -> Passage:
        """Return ``text[start:end]`` of a document, cut at :data:`MAX_SPAN_CHARS` characters.

        Raises:
            NotFoundError: No such document in the index.
            ConfigError: A refused id, or a span outside the document.
        """
        limits.check_id("document id", doc_id)

        def read(state: SessionState) -> Passage:
            doc = lookups.find_document(self.index, doc_id)
            size = len(doc.text)
            if not 0 <= start <= size:
                raise ConfigError(
                    f"start {start} is outside document {doc_id!r}, which has {size:,} "
                    f"characters: pass 0 <= start <= {size}"
                )
            stop = size if end is None else min(end, size)
            if stop < start:
                raise ConfigError(f"end {end} is before start {start}: pass end >= start")
            return read_passage(
                self.spans, self.meter, state, doc_id, (start, stop), size, doc.title, ""
            )

        with self._lock:
            return self._answer(session, read)

    def explain(self, query: str, chunk_id: str, mode: str | None = None) -> Explanation:
        """Take the score of ``chunk_id`` for ``query`` apart, term by term."""
        limits.check_query(query)
        limits.check_id("chunk id", chunk_id)
        with self._lock:
            lookups.find_chunk(self.index, chunk_id)
            return self.index.explain(query, chunk_id, self._mode(mode))

    def info(self) -> IndexInfo:
        """What the index holds and how it was built."""
        with self._lock:
            return self.index.info()

    def account(
        self, session: str | None, value: V, shrink: Callable[[V], V | None] | None = None
    ) -> V:
        """Fit another tool's result under the cap and add its size to the session's total.

        Raises:
            ConfigError: It does not fit and ``shrink`` cannot make it.
        """
        with self._lock:
            value = self.meter.fit_plain(value, shrink or (lambda _: None))
            state = self._state(session)
            state.calls += 1
            state.tokens += self.meter.tokens(value)
            return value

    def add_paths(self, paths: Sequence[str]) -> WriteResult:
        """Index new or changed files inside the roots, then reload the index (MCP ``add``).

        ``paths`` are relative to the roots' folder, like document ids. The roots are
        re-scanned as a whole (unchanged documents cost nothing), so nothing else is lost.

        Raises:
            ConfigError: A path is absolute, has ``..``, does not exist or leads through
                a symlink out of the roots, or the roots hold links to files outside them.
        """
        if not 1 <= len(paths) <= limits.MAX_PATHS:
            raise ConfigError(f"pass 1 to {limits.MAX_PATHS} paths, got {len(paths)}")
        with self._lock:
            for path in paths:
                roots.resolve_inside(self.index.roots, path)
            return self._write(tuple(paths))

    def index_paths(self) -> WriteResult:
        """Re-scan the indexed roots, index what changed, and reload the index (MCP ``index``).

        As :func:`ctxselect.index_paths` with no paths: the roots the index records.
        """
        with self._lock:
            return self._write(())

    def _answer(self, session: str | None, work: Callable[[SessionState], V]) -> V:
        """Run ``work`` (lock held) as :meth:`_attempt`, once more if the index changed.

        Raises:
            IndexLockedError: It changed during both runs.
        """
        for _ in range(2):
            found = self._attempt(session, work, generation_of(self.index))
            if found:
                return found[0]
        raise IndexLockedError(changed_while_read(self.index, "the call"))

    def _attempt(
        self, session: str | None, work: Callable[[SessionState], V], begun: Generation
    ) -> list[V]:
        """``[work(state)]``, on a copy of the session's state that replaces it only if the
        index stayed at generation ``begun`` meanwhile; ``[]`` if it changed (another
        process wrote it: what was read before may be missing after)."""
        draft = self._state(session).copy()
        try:
            result = work(draft)
        except KeyError:  # a row of one generation looked up in the next
            if same_generation(begun, generation_of(self.index)):
                raise
            return []
        if not same_generation(begun, generation_of(self.index)):
            return []
        if session is not None:
            self._sessions[session] = draft
        return [result]

    def _write(self, paths: tuple[str, ...]) -> WriteResult:
        fresh, result = roots.write(self.index, paths)
        if self._scans[id(self.index)]:
            self._retired[id(self.index)] = self.index  # closed when its scans end
        else:
            self.index.close()
        self.index = fresh
        self.spans = DocSpans(fresh)
        return result

    def _mode(self, mode: str | None, mmr: float | None = None) -> str:
        return lookups.resolve_mode(self.index, mode or self.default_mode, mmr)

    def _state(self, session: str | None) -> SessionState:
        """The session's state; None gets a throwaway one, so nothing is remembered.

        Sessions idle for ``idle_seconds`` are forgotten first (this one too: it starts
        anew), then the least recently used beyond ``max_sessions``.
        """
        if session is None:
            return SessionState()
        now = self._clock()
        if self.idle_seconds is not None:
            while self._sessions:
                oldest = next(iter(self._sessions.values()))  # least recently used first
                if now - oldest.used_at < self.idle_seconds:
                    break
                self._sessions.popitem(last=False)
        state = self._sessions.pop(session, None) or SessionState()
        state.used_at = now
        self._sessions[session] = state  # last: the most recently used
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return state

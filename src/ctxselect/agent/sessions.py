"""Sessions: the read path of one index, remembering what each session received."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ctxselect import api
from ctxselect.agent import limits, lookups, roots
from ctxselect.agent.grep import GrepResult
from ctxselect.agent.grep_session import SeenText
from ctxselect.agent.loading import load_index
from ctxselect.agent.material import Ask
from ctxselect.agent.memory import SessionState
from ctxselect.agent.passages import read_passage
from ctxselect.agent.results import Meter, received_as, shrink_search
from ctxselect.agent.select_session import empty_note, select_context
from ctxselect.agent.spans import DocSpans
from ctxselect.api.filters import make_filter
from ctxselect.errors import ConfigError
from ctxselect.tool_results import ContextResult, Passage, SearchResult
from ctxselect.types import Explanation, IndexInfo, WriteResult

V = TypeVar("V")


class Sessions:
    """Session-aware reads of one index, bounded by a result cap, safe across threads.

    A session is any string key (the MCP server uses one per client connection); None
    means "no session": nothing is remembered. Every method that returns text records
    the chunks it sent, so later calls send references instead.

    Args:
        index: An opened index; the write methods replace it with a reloaded one.
        max_result_tokens: No result, as ``serialize`` renders it, exceeds this many
            tokens of the index's tokenizer.
        serialize: The text a result reaches the caller as (default: indented JSON), except
            ``select``'s, which is always its text block plus compact metadata
            (:func:`ctxselect.agent.results.context_wire`).
        max_sessions: Sessions remembered at once; the least recently used is forgotten.
    """

    def __init__(
        self,
        index: api.Index,
        *,
        max_result_tokens: int = limits.DEFAULT_MAX_RESULT_TOKENS,
        serialize: Callable[[object], str] | None = None,
        max_sessions: int = limits.MAX_SESSIONS,
    ) -> None:
        self.index = index
        self.max_result_tokens = limits.check_max_result_tokens(max_result_tokens)
        self.max_sessions = max_sessions
        wire = received_as(serialize or limits.to_json)
        self.meter = Meter(self._count, wire, self.max_result_tokens)
        self.spans = DocSpans(index)
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.RLock()

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
        """Close the index."""
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
            state = self._state(session)
            mode = self._mode(mode, mmr)
            stop = lookups.check_stop(self.index, mode, stop)
            ask = Ask(query, mode, self.index.depth(budget), mmr, stop, filter)
            return select_context(
                self.spans, self.meter, state, ask, budget,
                detail=detail, refresh=refresh, promote=promote,
            )  # fmt: skip

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
            state = self._state(session)
            mode = self._mode(mode)
            hits = self.index.search(
                query, k, mode, include=filter.include, exclude=filter.exclude, where=filter.where
            )
            known = state.known(self.spans, hits)
            refs = tuple(
                self.spans.reference(h, known[h.chunk_id].call, h.n_tokens)
                for h in hits
                if h.chunk_id in known
            )
            new = tuple(h for h in hits if h.chunk_id not in known)
            used = sum(h.n_tokens for h in new) + sum(r.tokens for r in refs)
            note = "" if hits else empty_note(self.index, filter) or "no chunk matches the query"
            result = SearchResult(
                query, mode, k, new, refs, used, state.calls + 1, 0, 0, self.max_result_tokens, note
            )
            result = self.meter.fit(result, state.tokens, shrink_search)
            sent = [(h.doc_id, h.start, h.end) for h in result.hits]
            state.deliver(self.spans, result.call, result.result_tokens, sent)
            return result

    def grep(self, session: str | None, pattern: str, **options: Any) -> GrepResult:
        """Grep as :func:`~ctxselect.agent.grep.grep_index`; blocks the session has come back
        as references, blocks sent count as received (:mod:`~ctxselect.agent.grep_session`)."""
        with self._lock:
            state = self._state(session)
            had = {c: seen.call for c, seen in state.received(self.spans).items()}
            seen = SeenText(self.index, had, state.grepped)
            result = seen.grep(pattern, options, self.meter, state.calls + 1, state.tokens)
            sent = [(b.doc_id, b.start, b.end) for b in result.blocks]
            state.deliver(self.spans, result.call, result.result_tokens, sent)
            return result

    def get_chunk(self, session: str | None, chunk_id: str) -> Passage:
        """Return one chunk's text, even if the session has it (it was asked for by id).

        Raises:
            NotFoundError: No such chunk.
        """
        limits.check_id("chunk id", chunk_id)
        with self._lock:
            chunk = lookups.find_chunk(self.index, chunk_id)
            state = self._state(session)
            seen = state.sent(self.spans, chunk_id)
            note = f"already provided in call {seen.call}; sent again as asked" if seen else ""
            size = len(self.index.get_document(chunk.doc_id).text)
            return read_passage(
                self.spans,
                self.meter,
                state,
                chunk.doc_id,
                (chunk.start, chunk.end),
                size,
                chunk.header,
                note,
            )

    def get_document(
        self, session: str | None, doc_id: str, start: int = 0, end: int | None = None
    ) -> Passage:
        """Return ``text[start:end]`` of a document, cut at :data:`MAX_SPAN_CHARS` characters.

        Raises:
            NotFoundError: No such document in the index.
            ConfigError: A refused id, or a span outside the document.
        """
        limits.check_id("document id", doc_id)
        with self._lock:
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
            state = self._state(session)
            return read_passage(
                self.spans, self.meter, state, doc_id, (start, stop), size, doc.title, ""
            )

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

    def _write(self, paths: tuple[str, ...]) -> WriteResult:
        fresh, result = roots.write(self.index, paths)
        self.index.close()
        self.index = fresh
        self.spans = DocSpans(fresh)
        return result

    def _mode(self, mode: str | None, mmr: float | None = None) -> str:
        return lookups.resolve_mode(self.index, mode or self.default_mode, mmr)

    def _state(self, session: str | None) -> SessionState:
        """The session's state; None gets a throwaway one, so nothing is remembered."""
        if session is None:
            return SessionState()
        state = self._sessions.get(session)
        if state is None:
            state = self._sessions[session] = SessionState()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session)
        return state

"""Sessions: the read path of one index, remembering what each session received."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ctxselect import api
from ctxselect.agent import limits, lookups, roots
from ctxselect.agent.grep import GrepResult
from ctxselect.agent.grep_session import Grepped, SeenText
from ctxselect.agent.loading import load_index
from ctxselect.agent.material import Ask, new_material
from ctxselect.agent.results import Meter, received_as, shrink_context, shrink_search
from ctxselect.agent.spans import DocSpans, Fingerprint
from ctxselect.api.filters import make_filter
from ctxselect.errors import ConfigError
from ctxselect.types import (
    ContextResult,
    Explanation,
    Filter,
    Hit,
    IndexInfo,
    Passage,
    SearchResult,
    Selection,
    WriteResult,
)

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class _Delivered:
    """A chunk a session received: in which call, and which version of its text."""

    call: int
    fingerprint: Fingerprint


@dataclass(slots=True)
class _Session:
    calls: int = 0
    tokens: int = 0
    delivered: dict[str, _Delivered] = field(default_factory=dict)
    grepped: Grepped = field(default_factory=dict)


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
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
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
            hits = ask.rank(self.index)
            known = {} if refresh else self._known(state, hits)
            calls = {c: seen.call for c, seen in known.items()}
            refs = self.spans.references(ask.select(self.index, hits, budget), hits, calls, budget)
            received = set() if refresh else self._received(state)  # hits or not
            left = budget - sum(r.tokens for r in refs)
            selection = new_material(
                self.spans,
                ask,
                hits,
                known,
                left,
                received=received,
                detail=detail,
                promote=promote,
            )
            pieces = tuple(self.spans.piece(c, with_text=detail != "ids") for c in selection.chunks)
            result = ContextResult(
                query=query,
                mode=ask.mode,
                detail=detail,
                pieces=pieces,
                references=refs,
                dropped=selection.dropped[: limits.SHOWN_DROPPED],
                dropped_total=len(selection.dropped),
                tokens_used=selection.tokens_used + sum(r.tokens for r in refs),
                budget=budget,
                tokens_saved=sum(r.tokens_saved for r in refs),
                call=state.calls + 1,
                session_tokens=0,
                result_tokens=0,
                max_result_tokens=self.max_result_tokens,
                note=_context_note(hits, selection, refs, self._empty_note(filter)),
                stop=selection.stop,
            )
            result = self.meter.fit(result, state.tokens, shrink_context)
            sent = [] if detail == "ids" else [(p.doc_id, p.start, p.end) for p in result.pieces]
            ids = [] if detail == "ids" else [c for p in result.pieces for c in p.chunk_ids]
            self._deliver(state, result.call, result.result_tokens, sent, ids)
            return result

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
            known = self._known(state, hits)
            refs = tuple(
                self.spans.reference(h, known[h.chunk_id].call, h.n_tokens)
                for h in hits
                if h.chunk_id in known
            )
            new = tuple(h for h in hits if h.chunk_id not in known)
            used = sum(h.n_tokens for h in new) + sum(r.tokens for r in refs)
            note = "" if hits else self._empty_note(filter) or "no chunk matches the query"
            result = SearchResult(
                query, mode, k, new, refs, used, state.calls + 1, 0, 0, self.max_result_tokens, note
            )
            result = self.meter.fit(result, state.tokens, shrink_search)
            sent = [(h.doc_id, h.start, h.end) for h in result.hits]
            self._deliver(state, result.call, result.result_tokens, sent)
            return result

    def _empty_note(self, filter: Filter) -> str:
        """Why a search with ``filter`` found nothing ("" without a filter)."""
        if not filter:
            return ""
        return self.index.filter_note(
            include=filter.include, exclude=filter.exclude, where=filter.where
        )

    def grep(self, session: str | None, pattern: str, **options: Any) -> GrepResult:
        """Grep as :func:`~ctxselect.agent.grep.grep_index`; blocks the session has come back
        as references, blocks sent count as received (:mod:`~ctxselect.agent.grep_session`)."""
        with self._lock:
            state = self._state(session)
            had = {c: state.delivered[c].call for c in self._received(state)}
            seen = SeenText(self.index, had, state.grepped)
            result = seen.grep(pattern, options, self.meter, state.calls + 1, state.tokens)
            sent = [(b.doc_id, b.start, b.end) for b in result.blocks]
            self._deliver(state, result.call, result.result_tokens, sent)
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
            seen = state.delivered.get(chunk_id)
            note = f"already provided in call {seen.call}; sent again as asked" if seen else ""
            size = len(self.index.get_document(chunk.doc_id).text)
            return self._read(
                state, chunk.doc_id, (chunk.start, chunk.end), size, chunk.header, note
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
            return self._read(self._state(session), doc_id, (start, stop), size, doc.title, "")

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

    def _state(self, session: str | None) -> _Session:
        """The session's state; None gets a throwaway one, so nothing is remembered."""
        if session is None:
            return _Session()
        state = self._sessions.get(session)
        if state is None:
            state = self._sessions[session] = _Session()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session)
        return state

    def _has(self, state: _Session, chunk_id: str) -> bool:
        """Whether the session received this version of a live chunk."""
        seen = state.delivered.get(chunk_id)
        return seen is not None and seen.fingerprint == self.spans.fingerprint(chunk_id)

    def _known(self, state: _Session, hits: Sequence[Hit]) -> dict[str, _Delivered]:
        """Hits the session received whose text has not changed since."""
        ids = [h.chunk_id for h in hits if self._has(state, h.chunk_id)]
        return {c: state.delivered[c] for c in ids}

    def _received(self, state: _Session) -> set[str]:
        """Every live chunk the session received whose text has not changed since."""
        live = self.index.table.row_of
        return {c for c in state.delivered if c in live and self._has(state, c)}

    def _deliver(
        self,
        state: _Session,
        call: int,
        tokens: int,
        sent: Sequence[tuple[str, int, int]],
        ids: Sequence[str] = (),
    ) -> None:
        """Record a call: its size, and every chunk inside ``sent`` or in ``ids`` as received."""
        state.calls = call
        state.tokens += tokens
        chunk_ids = [c for span in sent for c in self.spans.covered(*span)]
        for chunk_id in dict.fromkeys([*chunk_ids, *ids]):
            state.delivered[chunk_id] = _Delivered(call, self.spans.fingerprint(chunk_id))

    def _read(
        self,
        state: _Session,
        doc_id: str,
        span: tuple[int, int],
        size: int,
        header: str,
        note: str,
    ) -> Passage:
        """A passage of ``span`` cut to MAX_SPAN_CHARS and the cap, recorded as sent."""
        start, end = span

        def passage(stop: int) -> Passage:
            text = self.index.span_text(doc_id, start, stop)
            first, last = self.spans.lines(doc_id, start, stop)
            cut = f"cut at {stop}: continue with start={stop}" if stop < end else ""
            return Passage(
                doc_id,
                start,
                stop,
                first,
                last,
                size,
                header,
                self.spans.covered(doc_id, start, stop),
                self._count(text),
                stop < end,
                stop if stop < size else None,
                text,
                state.calls + 1,
                0,
                0,
                self.max_result_tokens,
                "; ".join(p for p in (note, cut) if p),
            )

        def shorter(p: Passage) -> Passage | None:
            if p.end <= start:
                return None
            ratio = min(0.9, 0.9 * self.max_result_tokens / max(1, p.result_tokens))
            return passage(start + int((p.end - start) * ratio))

        result = self.meter.fit(
            passage(min(end, start + limits.MAX_SPAN_CHARS)), state.tokens, shorter
        )
        self._deliver(state, result.call, result.result_tokens, [(doc_id, start, result.end)])
        return result


def _context_note(
    hits: Sequence[Hit], selection: Selection, refs: Sequence[object], empty: str = ""
) -> str:
    if not hits:
        return empty or "no chunk matches the query"
    if not selection.chunks and refs:
        return "all the best chunks were already provided (refresh=true sends them again)"
    return selection.note

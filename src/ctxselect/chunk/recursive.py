"""Split a span of text into pieces of at most ``size`` tokens, with optional overlap.

Recursive splitting as in langchain's RecursiveCharacterTextSplitter and semchunk: cut at
the coarsest boundary that exists (paragraphs, lines, sentences, words, then characters),
recurse into pieces still too large, then pack pieces back together greedily. The limit
is a hard guarantee: every packed piece is counted exactly once more and shrunk if BPE
merges across a boundary ever push it over. A tiny piece (a heading, one word) takes its
next neighbour when the two fit together counted whole, so it never stands alone needlessly.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from ctxselect.chunk.spans import (
    TINY_TOKENS,
    Piece,
    blank_line,
    check_size,
    count_up_to,
    has_text,
    trim,
)
from ctxselect.errors import ConfigError
from ctxselect.tokens.base import TokenCounter


@functools.cache
def separators() -> tuple[Any, ...]:
    """Return the cut patterns, coarsest first: paragraphs, lines, sentences, words.

    A cut starts a piece, so separators lead the next piece (" word"), which is also how
    BPE tokenizers attach whitespace: piece counts then add up closely. A blank line is
    one without a visible character (a line of zero-width spaces too: ``blank_line``).
    """
    return (
        blank_line(r"\n"),  # paragraphs
        re.compile(r"\n"),  # lines
        re.compile(r"(?<=[.!?…。！？])\s+"),  # sentences
        re.compile(r"\s+"),  # words
    )


# Cuts inside a word look this far back for a grapheme cluster boundary (see below).
CLUSTER_WINDOW = 32
REGIONAL_INDICATOR = re.compile("[\U0001f1e6-\U0001f1ff]")


@functools.cache
def _grapheme() -> Any:
    # regex (a core dependency) knows extended grapheme clusters (UAX #29, \X); re does not
    import regex

    return regex.compile(r"\X")


def grapheme_floor(text: str, start: int, end: int, at: int) -> int:
    """Return the last grapheme cluster boundary in ``(start, at]`` of ``text[start:end]``.

    A cut there keeps a letter with its combining marks and an emoji ZWJ sequence whole.
    ``at`` itself when no boundary lies in the range: one cluster longer than the range.
    Only the last :data:`CLUSTER_WINDOW` characters are segmented, the first cluster found
    there distrusted (it may be the tail of one); flags (regional indicator pairs) and
    longer clusters are segmented from ``start``.
    """
    found = _floor(text, start, end, at)
    return found if found > start else at


def is_cluster_start(text: str, start: int, end: int, at: int) -> bool:
    """Tell whether a grapheme cluster boundary lies at ``at`` in ``text[start:end]``.

    ``text`` is segmented from ``start``, taken to be a boundary, as
    :func:`grapheme_floor` does; ``start`` and ``end`` themselves are boundaries.
    """
    return at <= start or at >= end or _floor(text, start, end, at) == at


def _floor(text: str, start: int, end: int, at: int) -> int:
    """Return the last cluster boundary in ``(start, at]``, or ``start`` when there is none."""
    if at < end and text[at - 1 : at + 1] != "\r\n" and max(text[at - 1 : at + 1]) < "\u0300":
        return at  # below the combining marks, only CR LF is one cluster of two
    window = max(start, at - CLUSTER_WINDOW)
    if window > start and not REGIONAL_INDICATOR.search(text, window, at):
        found = _last_boundary(text, window, end, at, trust_first=False)
        if found > window:
            return found
    return _last_boundary(text, start, end, at, trust_first=True)


def _last_boundary(text: str, start: int, end: int, at: int, *, trust_first: bool) -> int:
    """Return the last end of a cluster segmented from ``start`` that is ``<= at``."""
    last = start
    for k, match in enumerate(_grapheme().finditer(text, start, end)):
        if match.end() > at:
            break
        if k or trust_first:
            last = match.end()
    return last


def cut(text: str, start: int, end: int, pattern: Any) -> list[tuple[int, int]]:
    """Return the spans of ``text[start:end]`` between cuts at ``pattern``, blank ones dropped.

    A separator leads the span after it, except the invisible characters of a blank line
    (a zero-width space): they are in neither span, which starts at the last line break,
    so trimming whitespace leaves no invisible line at a piece's edge.
    """
    spans: list[tuple[int, int]] = []
    a = start
    for m in pattern.finditer(text, start, end):
        if m.start() > start:
            spans.append((a, m.start()))
            a = m.start()
        if not m.group().isspace():
            a = m.end() - 1
    spans.append((a, end))
    return [(a, b) for a, b in spans if has_text(text, a, b)]


class RecursiveSplitter:
    """Cut spans into pieces of at most ``size`` tokens of ``counter``.

    Args:
        counter: The tokenizer the limit is counted in.
        size: Hard maximum of tokens per piece.
        overlap: Tokens (at most) repeated from the end of one piece at the start of the
            next; must be smaller than ``size``.
    """

    def __init__(self, counter: TokenCounter, size: int, overlap: int = 0) -> None:
        check_size("tokens", size, overlap)
        self.counter = counter
        self.size = size
        self.overlap = overlap

    def split(self, text: str, start: int = 0, end: int | None = None) -> list[Piece]:
        """Return trimmed, non-blank pieces of ``text[start:end]`` in order, each <= size.

        Raises:
            ConfigError: A single character is more tokens than ``size``.
        """
        start, end = trim(text, start, len(text) if end is None else end)
        if start == end:
            return []
        (n,) = count_up_to(self.counter, self.size, text, [(start, end)])
        if n <= self.size:
            return [Piece(start, end, n)]
        # Atoms leave room for the overlap so that each chunk can take one fresh atom.
        atoms = self._atoms(text, start, end, self.size - self.overlap, 0)
        return self._pack(text, atoms)

    def _atoms(self, text: str, start: int, end: int, limit: int, level: int) -> list[Piece]:
        """Cut ``text[start:end]`` into untrimmed pieces of at most ``limit`` tokens.

        Only a single grapheme cluster (whole when within ``size``, else a character) can
        exceed it; the packer deals with it.
        """
        patterns = separators()
        for lvl in range(level, len(patterns)):
            spans = cut(text, start, end, patterns[lvl])
            if len(spans) > 1:
                break
        else:
            return self._char_atoms(text, start, end, limit)
        counts = count_up_to(self.counter, limit, text, spans)
        atoms: list[Piece] = []
        for (a, b), n in zip(spans, counts, strict=True):
            if n <= limit:
                atoms.append(Piece(a, b, n))
            else:
                atoms.extend(self._atoms(text, a, b, limit, lvl + 1))
        return atoms

    def _char_atoms(self, text: str, start: int, end: int, limit: int) -> list[Piece]:
        """Cut a span without separators into the longest prefixes of <= ``limit`` tokens.

        A single grapheme cluster above ``limit`` becomes an atom of its own, whole when it
        is within ``size`` (``limit`` leaves room for the overlap: the packer shortens the
        overlap for it), else cut by code points; the packer decides.
        """
        atoms: list[Piece] = []
        guess = 4 * limit
        while start < end:
            length, n = self._fit_prefix(text, start, end, limit, guess, strip=False)
            if has_text(text, start, start + length):
                atoms.append(Piece(start, start + length, n))
            start += length
            guess = length
        return atoms

    def _fit_prefix(
        self, text: str, start: int, end: int, limit: int, guess: int, *, strip: bool
    ) -> tuple[int, int]:
        """Return ``(length, tokens)`` of a longest prefix of <= ``limit`` tokens (length >= 1).

        Gallops from ``guess`` then bisects, so a prefix costs O(log length) encodings.
        With ``strip`` the prefix is counted without trailing whitespace. The prefix ends
        at a grapheme cluster boundary unless its first cluster alone is above ``limit``:
        then it is that cluster when within ``size``, else the longest prefix of it.
        """
        count = self.counter.count

        def tokens(length: int) -> int:
            piece = text[start : start + length]
            return count(piece.rstrip() if strip else piece)

        lo, lo_n = 1, tokens(1)
        if lo_n > limit:
            return self._first_cluster(text, start, end, lo, lo_n, tokens)
        hi = min(end - start, max(2, guess))
        while hi > lo:
            n = tokens(hi)
            if n > limit:
                break
            lo, lo_n = hi, n
            hi = min(end - start, 2 * hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            n = tokens(mid)
            if n <= limit:
                lo, lo_n = mid, n
            else:
                hi = mid
        if start + lo < end:
            cluster_end = grapheme_floor(text, start, end, start + lo)
            shorter = tokens(cluster_end - start) if cluster_end < start + lo else limit + 1
            if shorter <= limit:  # BPE counts need not shrink with the text: check
                lo, lo_n = cluster_end - start, shorter
            return self._first_cluster(text, start, end, lo, lo_n, tokens)
        return lo, lo_n

    def _first_cluster(
        self, text: str, start: int, end: int, lo: int, lo_n: int, tokens: Callable[[int], int]
    ) -> tuple[int, int]:
        """Return ``(lo, lo_n)``, or the whole first cluster of ``text[start:end]`` and its
        tokens when the prefix ``lo`` ends inside it and the cluster is within ``size``.

        ``limit`` is ``size - overlap`` for atoms, so an emoji sequence between the two
        would otherwise be cut inside although a chunk can hold it.
        """
        if start + lo >= end or _floor(text, start, end, start + lo) > start:
            return lo, lo_n
        whole = _grapheme().match(text, start, end).end() - start
        n = tokens(whole)
        return (whole, n) if n <= self.size else (lo, lo_n)

    def _pack(self, text: str, atoms: list[Piece]) -> list[Piece]:
        """Pack atoms greedily into pieces of <= size tokens, carrying the overlap over."""
        pieces: list[Piece] = []
        first = fresh = 0  # atoms[first:fresh] is the overlap carried from the last piece
        while fresh < len(atoms):
            total = sum(a.n_tokens for a in atoms[first:fresh])
            stop = fresh
            while stop < len(atoms) and total + atoms[stop].n_tokens <= self.size:
                total += atoms[stop].n_tokens
                stop += 1
            if stop == fresh and first < fresh:
                first += 1  # the overlap leaves no room for the next atom: shorten it
                continue
            if fresh < stop < len(atoms) and total <= TINY_TOKENS:
                stop = self._join_tiny(text, atoms, first, stop)
            fitted = self._verify(text, atoms, first, fresh, max(stop, fresh + 1))
            if fitted is None:
                self._cut_atom(text, atoms, fresh)
                first = fresh
                continue
            first, stop, piece = fitted
            pieces.append(piece)
            first, fresh = self._overlap_start(text, atoms, first, stop)
        return pieces

    def _join_tiny(self, text: str, atoms: list[Piece], first: int, stop: int) -> int:
        """Return where a tiny piece ``atoms[first:stop]`` ends once it takes the atoms
        after it that fit with it, counted whole.

        Atoms are counted apart, each with the separator before it, so their sum can
        exceed the text they make together: a heading or one word before a paragraph at
        the limit would otherwise stand alone although it fits with its neighbour.
        """
        start = atoms[first].start
        while stop < len(atoms) and self._count_span(text, start, atoms[stop].end) <= self.size:
            stop += 1
        return stop

    def _verify(
        self, text: str, atoms: list[Piece], first: int, fresh: int, stop: int
    ) -> tuple[int, int, Piece] | None:
        """Count ``atoms[first:stop]`` exactly; drop atoms until it fits, or None if it cannot.

        Fresh atoms go first (the piece keeps its overlap while it can), then overlap
        atoms; None means the single fresh atom alone is above the limit once trimmed.
        """
        while True:
            start, end = trim(text, atoms[first].start, atoms[stop - 1].end)
            n = self.counter.count(text[start:end])
            if n <= self.size:
                return first, stop, Piece(start, end, n)
            if stop - fresh > 1:
                stop -= 1
            elif first < fresh:
                first += 1
            else:
                return None

    def _cut_atom(self, text: str, atoms: list[Piece], index: int) -> None:
        """Replace ``atoms[index]`` by a prefix that fits once trimmed, and the rest."""
        atom = atoms[index]
        start, end = trim(text, atom.start, atom.end)
        length, n = self._fit_prefix(text, start, end, self.size, self.size, strip=True)
        if n > self.size:
            name = getattr(self.counter, "name", "the tokenizer")
            raise ConfigError(
                f"chunk size {self.size} is too small: the character {text[start]!r} "
                f"(U+{ord(text[start]):04X}) alone is {n} tokens in {name}; use a larger size"
            )
        parts = [Piece(start, start + length, n)]
        if start + length < end:
            rest = text[start + length : end]
            parts.append(Piece(start + length, end, self.counter.count(rest)))
        atoms[index : index + 1] = parts

    def _overlap_start(
        self, text: str, atoms: list[Piece], first: int, stop: int
    ) -> tuple[int, int]:
        """Return ``(first, fresh)`` for the next piece after ``atoms[first:stop]``.

        The overlap is the longest run of trailing atoms whose text together is within
        ``overlap`` tokens, never the whole previous piece. A last atom above the overlap
        is cut finer first, so some text is repeated whenever the last character allows it.
        The overlap starts at a grapheme cluster boundary: none when the last cluster
        alone is above ``overlap`` (an emoji ZWJ sequence of many tokens).
        """
        if not self.overlap or stop == len(atoms):
            return stop, stop
        last = atoms[stop - 1]
        if last.n_tokens > self.overlap:
            finer = self._atoms(text, last.start, last.end, self.overlap, 0)
            atoms[stop - 1 : stop] = finer
            stop += len(finer) - 1
        start, total = stop, 0
        while start - 1 > first and total + atoms[start - 1].n_tokens <= self.overlap:
            start -= 1
            total += atoms[start].n_tokens
        start, stop = self._whole_clusters(text, atoms, atoms[first].start, start, stop)
        # atoms counted apart can sum below the text they make together: count it whole
        end = atoms[stop - 1].end
        while start < stop and self._count_span(text, atoms[start].start, end) > self.overlap:
            start += 1
        return start, stop

    def _whole_clusters(
        self, text: str, atoms: list[Piece], origin: int, start: int, stop: int
    ) -> tuple[int, int]:
        """Make every atom of ``atoms[start:stop]`` start at a grapheme cluster boundary.

        An atom starting inside a cluster (a cut of one cluster above the overlap) joins
        the atom before it, or is left out of the overlap when it is the first one; the
        clusters are segmented from ``origin``. Returns the new ``(start, stop)``.
        """
        k = stop - 1
        while k >= start:
            atom = atoms[k]
            if not is_cluster_start(text, origin, len(text), atom.start):
                if k == start:
                    return start + 1, stop
                before = atoms[k - 1]
                n = self.counter.count(text[before.start : atom.end])
                atoms[k - 1 : k + 1] = [Piece(before.start, atom.end, n)]
                stop -= 1
            k -= 1
        return start, stop

    def _count_span(self, text: str, start: int, end: int) -> int:
        """Count the tokens of ``text[start:end]`` trimmed, as a piece holding it would."""
        start, end = trim(text, start, end)
        return self.counter.count(text[start:end])

"""Compiling ``grep``'s pattern, and how large it compiles, checked before ``regex`` does.

The ``regex`` module copies the body of a counted repeat ``{m}`` m times, so a short
pattern such as ``x{1000000000}`` asks for hundreds of gigabytes: ``grep`` (the CLI and the
MCP tool) refuses such a pattern from its text alone, before compiling it.
"""

from __future__ import annotations

import re
from typing import Any

# regex, not re: its matching takes a timeout, the guard against catastrophic backtracking
import regex

from ctxselect.errors import ConfigError

MAX_PATTERN_SIZE = 100_000
"""Items a regex may compile to (:func:`pattern_size`): ``regex`` copies the body of a
counted repeat ``{m}`` m times, ~270 bytes each, so ``x{1000000000}`` needs ~270 GB."""

_COUNT = re.compile(r"\{(\d*)(?:,\d*)?\}")
_BRACED_ESCAPES = ("p{", "P{", "N{", "x{")


def check_pattern_size(pattern: str) -> str:
    """Return ``pattern`` unless it compiles to more than :data:`MAX_PATTERN_SIZE` items.

    Raises:
        ConfigError: Its counted repeats make it too large to compile.
    """
    size = pattern_size(pattern)
    if size > MAX_PATTERN_SIZE:
        shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
        raise ConfigError(
            f"pattern {shown!r} repeats too much: its counted repeats ({{m}}, {{m,n}}) "
            f"make about {size:,} copies when compiled, above the limit of "
            f"{MAX_PATTERN_SIZE:,}: use smaller counts ({{0,n}}, * and + cost nothing), "
            f"or pass fixed (--fixed) to search for the text literally"
        )
    return pattern


def pattern_size(pattern: str) -> int:
    """About how many items ``pattern`` compiles to: a counted repeat ``{m}`` or ``{m,n}``
    copies its atom (a group: all of it) m times; copies inside copies multiply.

    An estimate from the pattern's text, read as ``regex`` reads it: escapes, classes and
    comments hold no repeats. Over-counts a little (each group prefix character counts).
    """
    frames = [[0, 0]]  # per open group: [its size so far, the size of its last atom]
    i, n = 0, len(pattern)
    while i < n:
        char, frame, atom = pattern[i], frames[-1], 1
        if char == "{" and frame[1] and (count := _COUNT.match(pattern, i)):
            extra = frame[1] * (max(int(count.group(1) or 0), 1) - 1)
            frame[0], frame[1] = frame[0] + extra, frame[1] + extra
            i = count.end()
            continue
        if pattern.startswith("(?#", i):
            i = _past(pattern, ")", i)
        elif char == "(":
            frames.append([0, 0])
            i += 1
            continue
        elif char == ")" and len(frames) > 1:
            atom = max(frames.pop()[0], 1)
            frame, i = frames[-1], i + 1
        elif char == "\\":
            braced = pattern[i + 1 : i + 3] in _BRACED_ESCAPES  # \p{Greek}, \N{SNOWMAN}
            i = _past(pattern, "}", i) if braced else i + 2
        elif char == "[":
            i = _class_end(pattern, i)
        else:
            i += 1
        frame[0], frame[1] = frame[0] + atom, atom
    return sum(size for size, _ in frames)


def _past(pattern: str, closing: str, start: int) -> int:
    end = pattern.find(closing, start)
    return len(pattern) if end < 0 else end + 1


def _class_end(pattern: str, start: int) -> int:
    """Where the character class opening at ``start`` ends (``]`` first in it is literal)."""
    i = start + 1
    i += pattern.startswith("^", i)
    i += pattern.startswith("]", i)
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern.startswith("[:", i):
            i = _past(pattern, ":]", i)
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return i


def compile_pattern(pattern: str, *, fixed: bool = False, ignore_case: bool = False) -> Any:
    """Compile ``pattern`` (``re`` syntax and flags) or refuse it naming the position.

    Raises:
        ConfigError: Not a valid regular expression, or one too large to compile
            (:func:`ctxselect.agent.grep_pattern.check_pattern_size`).
    """
    if not fixed:
        check_pattern_size(pattern)
    flags = regex.VERSION0 | regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
    try:
        return regex.compile(regex.escape(pattern) if fixed else pattern, flags)
    except regex.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ConfigError(
            f"invalid regex {pattern!r}{where}: {exc.msg}; fix the pattern, or pass fixed "
            f"(--fixed) to search for the text literally"
        ) from None

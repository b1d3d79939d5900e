"""Front matter: the YAML (``---``) or TOML (``+++``) block opening a Markdown text.

One reader, shared by ingest (a document's fields) and the Markdown chunker (the block is
metadata, in no chunk). Values are kept as text: no YAML or TOML parser is a dependency.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """A Markdown text's front matter: where its block ends and the fields it sets.

    Attributes:
        end: Offset just after the closing ``---``, ``...`` or ``+++`` line (and its line
            break); 0 when there is none.
        fields: The top-level ``key: value`` pairs, quotes and trailing comments removed.
    """

    end: int = 0
    fields: tuple[tuple[str, str], ...] = ()


_NO_FRONT_MATTER = FrontMatter()
MAX_FRONT_MATTER_LINES = 200
MAX_KEY_CHARS = 200
MAX_VALUE_CHARS = 2000
HIDDEN_CLASS = r"\p{Cf}\p{Default_Ignorable_Code_Point}"
"""Characters that show nothing and are not whitespace, as a ``regex`` character class:
format characters (Cf: U+FEFF BOM, U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+00AD
SOFT HYPHEN, bidi marks) and the rest of Unicode's Default_Ignorable_Code_Point set."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # a lone CR too: API text is not normalised
_YAML_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")
# blank, indented (nested values), a comment, a list item (a value of the key above), "k:v"
_YAML_OTHER = re.compile(r"^(\s*|\s.*|#.*|- .*|-|[A-Za-z_][\w.-]*\s*:.*)$")
_TOML_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*=\s*(.*)$")
# blank, indented, a comment, a [table] header, array items and closers, a quoted key
_TOML_OTHER = re.compile(r"^(\s*|\s.*|#.*|\[.*|[\]}\"'\d].*)$")
_MULTILINE_STRING = ('"""', "'''")
# opening line -> (closing lines, top-level key line, other allowed line)
_FENCES = {
    "---": (("---", "..."), _YAML_KEY, _YAML_OTHER),
    "+++": (("+++",), _TOML_KEY, _TOML_OTHER),
}


def read_front_matter(text: str) -> FrontMatter:
    """Read the front matter opening ``text``; the one reader ingest and chunkers share.

    A block is YAML front matter when a ``---`` first line is closed by ``---`` or ``...``,
    TOML front matter when a ``+++`` first line is closed by ``+++``, within
    :data:`MAX_FRONT_MATTER_LINES` lines; every line between must be YAML-like (``key:``,
    blank, indented, a ``#`` comment, a ``- `` item) or TOML-like (``key = value``, blank,
    indented, a comment, a ``[table]`` header, array items), and at least one must be a
    key. So a thematic break opening a document, then a ``# heading`` and ``- item``
    lines, then another break, is content, not metadata. Invisible characters before the
    first line (a BOM, a zero-width space: :data:`HIDDEN_CLASS`) are skipped, and a lone
    CR ends a line as LF and CRLF do, so text given to the API unnormalised reads as
    ingest reads the file. Values are kept as text (no YAML or TOML parser is a
    dependency); a key whose value is on following lines, or under a TOML ``[table]``,
    gives no field.
    """
    lines = _first_lines(text, _hidden_prefix(text), MAX_FRONT_MATTER_LINES + 2)
    fence = _FENCES.get(lines[0][0].rstrip()) if len(lines) >= 3 else None
    if fence is None:
        return _NO_FRONT_MATTER
    closers, key_line, other_line = fence
    keys = in_table = False
    found: dict[str, str] = {}
    for line, end in lines[1 : MAX_FRONT_MATTER_LINES + 1]:
        line = line.rstrip()
        if line in closers:
            return FrontMatter(end, tuple(found.items())) if keys else _NO_FRONT_MATTER
        match = key_line.match(line)
        if match is None:
            if not other_line.match(line):
                return _NO_FRONT_MATTER
            in_table = in_table or (key_line is _TOML_KEY and line.startswith("["))
            continue
        keys, value = True, _unquote((match.group(2) or "").strip())
        if value and not in_table and not _continued(value, key_line is _TOML_KEY):
            found[match.group(1)[:MAX_KEY_CHARS]] = value[:MAX_VALUE_CHARS]
    return _NO_FRONT_MATTER  # never closed: not front matter


def _continued(value: str, toml: bool) -> bool:
    """Tell whether ``value`` is a comment, or (TOML) opens a multi-line string or array."""
    opens = value.count("[") > value.count("]") or value.count("{") > value.count("}")
    return value[0] == "#" or (toml and (value.startswith(_MULTILINE_STRING) or opens))


@functools.cache
def _hidden_run() -> Any:
    import regex  # a core dependency that knows Unicode properties; imported on first use

    return regex.compile(rf"[{HIDDEN_CLASS}]*")


def _hidden_prefix(text: str) -> int:
    """Return the length of the run of :data:`HIDDEN_CLASS` characters opening ``text``."""
    return _hidden_run().match(text).end() if text[:1] > "\x7f" else 0


def _first_lines(text: str, start: int, limit: int) -> list[tuple[str, int]]:
    """Return up to ``limit`` lines from ``start``, each with the offset just after it."""
    lines: list[tuple[str, int]] = []
    for match in _LINE_BREAK.finditer(text, start):
        lines.append((text[start : match.start()], match.end()))
        start = match.end()
        if len(lines) == limit:
            return lines
    lines.append((text[start:], len(text)))
    return lines


def _unquote(value: str) -> str:
    quote = value[:1]
    if quote in ("'", '"'):
        if len(value) >= 2 and value[-1] == quote:
            return value[1:-1]
        close = value.find(quote, 1)  # a quoted value, then a trailing comment
        return value[1:close] if close > 0 and value[close + 1 :].lstrip()[:1] == "#" else value
    if " #" in value and value[0] not in "[{":  # a trailing comment
        value = value.split(" #", 1)[0].rstrip()
    return value

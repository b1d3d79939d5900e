"""The ``rst`` chunker: reStructuredText sections, their heading path as header.

Sections are found by a small parser of RST's title adornment rules rather than by
docutils, for three reasons. Offsets: chunks must point at exact characters of the
document, and docutils nodes carry line numbers only (titles none at all in some
cases), while this parser works on line offsets directly. Robustness: real RST (Django's
and most projects' docs) is written for Sphinx, whose roles and directives docutils does
not know without Sphinx; every unknown one is an error node, and ``include`` directives
would read other files. Section structure needs none of that: it is decided by
adornments alone. Speed and weight: one pass over the lines, no dependency.

The rules (docutils' "Sections" specification): a title is a line of text directly
under a blank line (or the start, or another title) followed by an underline, and
optionally preceded by an overline, of one repeated punctuation character, at least as
long as the title (or 4 characters or more, which docutils accepts with a warning).
Overline and underline must match. Titles start in column 0 (only an overlined title
may be inset), so indented text (literal blocks, directive bodies, block quotes) never
opens a section; an unindented "quoted" literal block after ``::`` is skipped too. Each
new style (character, with or without overline) is one level deeper, in order of first
appearance. Lists, comments, field lists, doctests and line blocks are not titles. A
section starts at the ``.. _label:`` targets right above its title, which name it.

Checked against docutils 0.23 on 2,590 real ``.rst`` files (Python, awscli, gsutil and
others): same sections and levels in every file, about 100 times faster.
"""

from __future__ import annotations

import re
import unicodedata

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.markdown import MarkdownChunker, Section, section_tree

# One punctuation character (RST's adornment set: printable 7-bit ASCII non-alphanumerics)
# repeated, and nothing else on the line but trailing whitespace.
ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1*[ \t]*")
# Lines that start other body elements, so they are never titles.
NOT_TITLE = re.compile(r"(?:[-*+•‣⁃](?: |$)|\.\.(?: |$)|>>>|\|(?: |$)|:[^:\s][^:]*:(?: |$))")
# An internal hyperlink target (".. _label:"): it names the element below, so a section
# starts at the targets just above its title rather than leaving them to the one before.
TARGET = re.compile(r"\.\. _.+:[ \t]*")
_MIN_ADORNMENT = 4  # docutils accepts a shorter-than-title adornment from this length


def _width(text: str) -> int:
    """Columns ``text`` takes, as docutils measures titles (wide East Asian characters: 2)."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _adornment(line: str) -> str:
    """Return the adornment ``line`` is, without trailing whitespace, or ""."""
    return line.rstrip() if ADORNMENT.fullmatch(line) else ""


def _long_enough(adornment: str, title: str) -> bool:
    return len(adornment) >= _width(title) or len(adornment) >= _MIN_ADORNMENT


def _title_at(lines: list[str], i: int) -> tuple[str, str, int] | None:
    """Return ``(title, style, lines used)`` if a section title starts at line ``i``."""
    over = _adornment(lines[i])
    if over:
        if i + 2 >= len(lines):
            return None
        title, under = lines[i + 1].strip(), _adornment(lines[i + 2])
        if title and under == over and not _adornment(lines[i + 1]) and _long_enough(over, title):
            return title, "over" + over[0], 3
        return None
    line = lines[i]
    if i + 1 >= len(lines) or line[:1].isspace() or NOT_TITLE.match(line):
        return None
    under = _adornment(lines[i + 1])
    title = line.strip()
    if under and _long_enough(under, title):
        return title, under[0], 2
    return None


def _quoted_literal(lines: list[str], i: int) -> bool:
    """Tell whether line ``i`` opens an unindented literal block quoted by punctuation."""
    quote = lines[i][:1]
    if not ADORNMENT.fullmatch(quote):
        return False
    j = i
    while j < len(lines) and lines[j].strip():
        if not lines[j].startswith(quote):
            return False
        j += 1
    return True


def _targets_above(lines: list[str], i: int) -> int:
    """Return the first line of the link targets just above line ``i`` (``i`` if none)."""
    first, j = i, i - 1
    while j >= 0 and (not lines[j].strip() or TARGET.fullmatch(lines[j])):
        if lines[j].strip():
            first = j
        j -= 1
    return first


def headings(text: str) -> list[tuple[int, int, int, str]]:
    """Return ``(start, body, level, title)`` of each RST section title, in order.

    ``start`` is the offset of the title's first line (its overline, if any) or of the
    ``.. _label:`` targets just above it, ``body`` the offset just after its underline.
    ``text`` uses ``\\n`` newlines (ingest's normalisation).
    """
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    styles: dict[str, int] = {}
    found: list[tuple[int, int, int, str]] = []
    fresh, literal = True, False  # at a body element's start; after a "::" paragraph
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            fresh, i = True, i + 1
            continue
        if fresh and literal and _quoted_literal(lines, i):
            while i < len(lines) and lines[i].strip():
                i += 1
            literal = False
            continue
        title = _title_at(lines, i) if fresh else None
        if title is not None:
            name, style, used = title
            level = styles.setdefault(style, len(styles) + 1)
            start = offsets[_targets_above(lines, i)]
            found.append((start, min(offsets[i + used], len(text)), level, name))
            fresh, literal, i = True, False, i + used
            continue
        literal = line.rstrip().endswith("::") and not line.startswith("..")
        fresh, i = False, i + 1
    return found


@CHUNKERS.register("rst")
class RstChunker(MarkdownChunker):
    """Cut reStructuredText at every section title; each chunk's header is its title path.

    Everything else is the ``markdown`` chunker's: small sibling sections merge up to
    ``size``, larger ones are cut by the recursive splitter (with ``overlap``), and
    ``parent_id`` is the span of the smallest section holding the chunk, so parent
    promotion works the same way. The document's own title is its first section's, so
    headers read ``Title > Section > Subsection``.

    Args:
        size: Maximum tokens of ``counter`` per chunk.
        overlap: Tokens repeated between pieces of one section cut by the splitter.
        counter: The tokenizer; the default tokenizer when None.
    """

    name = "rst"

    # 2 (with an overlap): the overlap is counted as one text (before: per piece, 1 over
    # at times); 3: a tiny opening piece joins the next one when they fit together; 4: a
    # cut inside a word never splits a grapheme cluster (a letter and its accents); 5: a
    # line of invisible characters only separates paragraphs, and overlaps start at a
    # grapheme cluster boundary
    layout = "5"

    def _tree(self, text: str) -> Section:
        return section_tree(text, headings(text))

    def _table_head(self, text: str, at: int) -> str:
        return ""  # RST tables are grid and simple tables, not Markdown's pipe tables

"""The ``markdown`` chunker: heading sections, their heading path as header.

Headings come from markdown-it-py's block tokens, whose line maps point back into the
source, so ``#`` lines inside fenced code never start a section. A section too large for
``size`` is cut by the recursive splitter; small sibling sections are merged. Front matter
(YAML between ``---`` lines or TOML between ``+++`` lines, as
:func:`ctxselect.front_matter.read_front_matter` reads it) is metadata, not content: it is in no
chunk (chunks start after it, offsets unchanged), and the parser never reads it as a
thematic break and a setext heading. A chunk that starts inside a GFM table, after its
header row, carries the header row and delimiter row in its header, after the heading path.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.recursive import RecursiveSplitter
from ctxselect.chunk.sized import SizedChunker
from ctxselect.chunk.spans import TINY_TOKENS, Row, has_text, longest_run, to_chunks, trim
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.front_matter import read_front_matter
from ctxselect.tokens.base import TokenCounter
from ctxselect.tokens.counters import count_many
from ctxselect.types import Chunk, Document

# The line breaks markdown-it normalises to "\n", so its line numbers match ours.
NEWLINE = re.compile(r"\r\n?|\n")
PATH_SEPARATOR = " > "
# A line of dashes, colons, pipes and spaces, as a table's delimiter row is: a text with
# no such line (or no pipe) holds no table and is not parsed for tables.
DELIMITER_ROW = re.compile(r"(?:^|(?<=[\r\n]))(?=[^\r\n]*-)[-:| \t]+(?:[\r\n]|\Z)")


@dataclass(slots=True, eq=False)
class Section:
    """A heading and everything up to the next heading of the same or a higher level.

    The root (``level`` 0) is the whole document. A section's own text runs from its
    heading to its first subsection (``own_end``); the root's own text is what precedes
    the first heading. ``body`` is where the text after the heading line starts.
    """

    level: int
    path: tuple[str, ...]
    start: int
    body: int
    end: int = 0
    parent: Section | None = None
    children: list[Section] = field(default_factory=list)

    @property
    def own_end(self) -> int:
        """End of the text before the first subsection."""
        return self.children[0].start if self.children else self.end

    def walk(self) -> Iterator[Section]:
        """Yield this section and all below it in document order."""
        yield self
        for child in self.children:
            yield from child.walk()


def front_matter_end(text: str) -> int:
    """Return the offset just after a front matter block's closing line (0: none).

    The block is read by :func:`ctxselect.front_matter.read_front_matter`, as ingest reads the
    fields, so a document that opens with a thematic break (``---``) followed by prose,
    or by a ``# heading`` and ``- item`` lines and another break, loses nothing.
    """
    return read_front_matter(text).end


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt  # imported on first use to keep startup light

    return MarkdownIt("commonmark")


@functools.cache
def _table_parser() -> Any:
    from markdown_it import MarkdownIt

    # a parser of its own: enabling tables in _parser would move headings next to tables
    return MarkdownIt("commonmark").enable("table")


def _parse(text: str, parser: Any) -> tuple[list[int], list[Any]]:
    """Return the offset of each line of ``text`` (and ``len(text)``) and its block tokens.

    Front matter is blanked, so its lines (CR-only ones too) keep their numbers.
    """
    line_starts = [0]
    line_starts.extend(m.end() for m in NEWLINE.finditer(text))
    line_starts.append(len(text))
    skip = front_matter_end(text)
    return line_starts, parser.parse(re.sub(r"[^\r\n]", " ", text[:skip]) + text[skip:])


class TableHead(NamedTuple):
    """A top-level GFM table: its span of lines and the rows that name its columns."""

    start: int
    end: int
    head: str
    """The header row and the delimiter row, stripped, on one line (headers are one line)."""


@functools.lru_cache(maxsize=2)  # every row of one text asks; a str caches its hash
def table_heads(text: str) -> tuple[TableHead, ...]:
    """Return the top-level GFM tables of ``text`` in order (tables in lists or quotes: no)."""
    if "|" not in text or not DELIMITER_ROW.search(text):
        return ()
    line_starts, tokens = _parse(text, _table_parser())
    found = []
    for token in tokens:
        if token.type == "table_open" and token.level == 0 and token.map:
            first, last = token.map
            rows = (text[line_starts[i] : line_starts[i + 1]].strip() for i in (first, first + 1))
            found.append(TableHead(line_starts[first], line_starts[last], " ".join(rows)))
    return tuple(found)


def table_head_at(text: str, at: int) -> str:
    """Return the head of the table ``text[at]`` is in after its first character, or ""."""
    for table in table_heads(text):
        if table.start < at < table.end:
            return table.head
    return ""


def headings(text: str) -> list[tuple[int, int, int, str]]:
    """Return ``(start, body, level, title)`` of each top-level heading, in order.

    ``start`` is the offset of the heading line, ``body`` the offset just after it.
    """
    line_starts, tokens = _parse(text, _parser())
    found = []
    for i, token in enumerate(tokens):
        # level 0: headings nested in lists or quotes do not open document sections.
        if token.type == "heading_open" and token.level == 0 and token.map:
            first, last = token.map
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            # a setext heading may span lines: the header is one line
            title = " ".join(inline.content.split()) if inline is not None else ""
            found.append((line_starts[first], line_starts[last], int(token.tag[1:]), title))
    return found


def section_tree(
    text: str, found: Sequence[tuple[int, int, int, str]] | None = None, *, body: int = 0
) -> Section:
    """Return the root section of ``text`` with every heading section beneath it.

    ``found`` gives the headings as :func:`headings` does (other markups pass their own).
    ``body`` is where the root's text starts (after front matter); the root spans it all.
    """
    root = Section(level=0, path=(), start=0, body=body, end=len(text))
    stack = [root]
    for start, body, level, title in headings(text) if found is None else found:
        while stack[-1].level >= level:
            stack.pop().end = start
        parent = stack[-1]
        path = parent.path + ((title,) if title else ())
        node = Section(level, path, start, body, parent=parent)
        parent.children.append(node)
        stack.append(node)
    for node in stack[1:]:
        node.end = len(text)
    return root


def heading_header(title: str, path: tuple[str, ...]) -> str:
    """Join the heading path with " > ", prefixed by the title unless it already leads."""
    parts = list(path)
    if title and (not parts or parts[0] != title):
        parts.insert(0, title)
    return PATH_SEPARATOR.join(parts)


def sibling_key(text: str, node: Section) -> Section | None:
    """Return the section whose subsections ``node``'s own text may merge with.

    Siblings share a parent. A bare heading (no text before its first subsection) joins
    its own subsections instead, so "## Install" never stands alone. The text before the
    first heading is a section of its own and merges with nothing (None).
    """
    if node.parent is None:
        return None
    if node.children and not has_text(text, node.body, node.own_end):
        return node
    return node.parent


@dataclass(slots=True)
class _Unit:
    """The own text of one section, trimmed, with its size and merge key."""

    start: int
    end: int
    n_tokens: int
    section: Section
    key: Section | None


@CHUNKERS.register("markdown")
class MarkdownChunker(SizedChunker):
    """Cut Markdown at every heading; each chunk's header is its heading path.

    A section's own text (heading to next heading) is one unit. Consecutive sibling units
    (same parent section) merge greedily up to ``size`` and take the parent's path as
    header; a unit larger than ``size`` is cut by the recursive splitter (with
    ``overlap``), each piece keeping the section's path. A piece that starts inside a
    GFM table after its header row has the table's header row and delimiter row at the
    end of its one-line header (``Guide > Results > | Model | nDCG | |---|---:|``), so
    its rows keep their column names (``n_tokens`` counts the text only, as for the
    heading path). ``parent_id`` is
    ``doc_id@start:end``, the span of the smallest section containing the whole chunk
    (``@0:len`` for the document).

    Args:
        size: Maximum tokens of ``counter`` per chunk.
        overlap: Tokens repeated between pieces of one section cut by the splitter.
        counter: The tokenizer; the default tokenizer when None.
    """

    name = "markdown"
    # front-matter: front matter is in no chunk (before: a chunk of its own); 2: only a
    # block ingest reads as front matter, and the overlap is counted as one text; 3: a
    # tiny opening run joins the next one when they fit together; 4: a cut inside a word
    # never splits a grapheme cluster (a letter and its accents), and a heading written
    # on several lines is a one-line header; 5: a chunk starting inside a table has the
    # table's head in its header, a line of invisible characters only separates
    # paragraphs, and overlaps start at a grapheme cluster boundary
    layout = "front-matter-5"

    def __init__(
        self,
        size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = 0,
        counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(size, overlap, counter)
        self.splitter = RecursiveSplitter(self.counter, size, overlap)

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` in document order.

        Raises:
            ConfigError: ``size`` is smaller than the tokens of a single character.
        """
        if not has_text(doc.text, 0, len(doc.text)):
            return []
        return to_chunks(doc, self._rows(doc, self._units(doc.text)))

    def _tree(self, text: str) -> Section:
        """Return the section tree of ``text`` (a chunker for another markup overrides it)."""
        return section_tree(text, body=front_matter_end(text))

    def _units(self, text: str) -> list[_Unit]:
        own = [(s.body if s.parent is None else s.start, s) for s in self._tree(text).walk()]
        spans = [(*trim(text, start, s.own_end), s) for start, s in own]
        spans = [(a, b, s) for a, b, s in spans if a < b]
        counts = count_many(self.counter, [text[a:b] for a, b, _ in spans])
        return [
            _Unit(a, b, n, s, sibling_key(text, s))
            for (a, b, s), n in zip(spans, counts, strict=True)
        ]

    def _table_head(self, text: str, at: int) -> str:
        """Return the head of the table a chunk starting at ``at`` is inside, or ""."""
        return table_head_at(text, at)

    def _row(self, doc: Document, run: SectionRun) -> Row:
        header = heading_header(doc.title, run.heading.path)
        table = self._table_head(doc.text, run.start)
        if table:  # not counted in n_tokens, as the heading path is not: text only
            header = f"{header}{PATH_SEPARATOR}{table}" if header else table
        parent_id = f"{doc.doc_id}@{run.owner.start}:{run.owner.end}"
        return Row(run.start, run.end, run.n_tokens, header, parent_id)

    def _rows(self, doc: Document, units: list[_Unit]) -> list[Row]:
        """Merge runs of small sibling units up to ``size``; cut units above it.

        A run of at most :data:`TINY_TOKENS` that opens a section (a lone heading, a
        one-word preamble) then joins the run after it when the two fit ``size``.
        """
        runs = _join_tiny_openers(self.counter, self.size, doc.text, self._runs(doc, units))
        return [self._row(doc, run) for run in runs]

    def _runs(self, doc: Document, units: list[_Unit]) -> list[SectionRun]:
        """Return the runs of units, in order: merged siblings, or pieces of a cut unit."""
        runs: list[SectionRun] = []
        i = 0
        while i < len(units):
            unit = units[i]
            if unit.n_tokens > self.size:
                pieces = self.splitter.split(doc.text, unit.start, unit.end)
                runs.extend(
                    SectionRun(*p, unit.section, unit.section, k > 0) for k, p in enumerate(pieces)
                )
                i += 1
                continue
            stop, total = i + 1, unit.n_tokens
            while (
                stop < len(units)
                and unit.key is not None
                and units[stop].key is unit.key
                and total + units[stop].n_tokens <= self.size
            ):
                total += units[stop].n_tokens
                stop += 1
            stop, n = longest_run(self.counter, self.size, doc.text, units, i, stop)
            owner = (unit.key or unit.section) if stop - i > 1 else unit.section
            runs.append(SectionRun(unit.start, units[stop - 1].end, n, owner, owner))
            i = stop
        return runs


class SectionRun(NamedTuple):
    """A chunk before it is a Row.

    ``owner`` is the smallest section holding it (its ``parent_id``), ``heading`` the
    section whose path is its header, and ``continued`` marks a piece of a cut unit
    after the first (it opens nothing).
    """

    start: int
    end: int
    n_tokens: int
    owner: Section
    heading: Section
    continued: bool = False


def _join_tiny_openers(
    counter: TokenCounter, size: int, text: str, runs: list[SectionRun]
) -> list[SectionRun]:
    """Join each opening run of at most :data:`TINY_TOKENS` to the next when both fit ``size``.

    The joined run is counted whole, owned by the smallest section holding both and
    headed as the next run (as the code chunker's joined runs keep their neighbour's
    scope). A tiny run stays alone when it cannot fit, when it is the tail of a cut unit
    (it opens nothing), or when the join would straddle the edge of a section that owns
    other chunks: parent promotion never replaces a chunk that straddles its section.
    """
    owned = Counter(run.owner for run in runs)
    out = list(runs)
    i = 0
    while i < len(out) - 1:
        run, after = out[i], out[i + 1]
        owner = _common_section(run.owner, after.owner)
        if (
            run.n_tokens <= TINY_TOKENS
            and not run.continued
            and owned[after.owner] == 1
            and (owner is run.owner or owned[run.owner] == 1)
        ):
            n = counter.count(text[run.start : after.end])
            if n <= size:
                owned.subtract((run.owner, after.owner))
                owned[owner] += 1
                out[i : i + 2] = [SectionRun(run.start, after.end, n, owner, after.heading)]
                continue  # a joined run can still be tiny: look at it again
        i += 1
    return out


def _common_section(a: Section, b: Section) -> Section:
    """Return the smallest section that holds both ``a`` and ``b``."""
    ancestors: set[Section] = set()  # sections compare and hash by identity (eq=False)
    node: Section | None = a
    while node is not None:
        ancestors.add(node)
        node = node.parent
    while b not in ancestors and b.parent is not None:
        b = b.parent
    return b

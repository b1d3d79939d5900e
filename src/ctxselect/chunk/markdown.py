"""The ``markdown`` chunker: heading sections, their heading path as header.

Headings come from markdown-it-py's block tokens, whose line maps point back into the
source, so ``#`` lines inside fenced code never start a section. A section too large for
``size`` is cut by the recursive splitter; small sibling sections are merged.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.recursive import RecursiveSplitter
from ctxselect.chunk.spans import Row, has_text, to_chunks, trim
from ctxselect.config import DEFAULT_CHUNK_SIZE, DEFAULT_TOKENIZER
from ctxselect.tokens.base import TokenCounter
from ctxselect.tokens.counters import count_many, get_counter
from ctxselect.types import Chunk, Document

# The line breaks markdown-it normalises to "\n", so its line numbers match ours.
NEWLINE = re.compile(r"\r\n?|\n")
PATH_SEPARATOR = " > "


@dataclass(slots=True)
class Section:
    """A heading and everything up to the next heading of the same or a higher level.

    The root (``level`` 0) is the whole document; its own text is what precedes the first
    heading. ``own_end`` is where the section's own text stops (its first subsection).
    """

    level: int
    path: tuple[str, ...]
    start: int
    end: int = 0
    children: list[Section] = field(default_factory=list)

    @property
    def own_end(self) -> int:
        """End of the text before the first subsection."""
        return self.children[0].start if self.children else self.end


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt  # imported on first use to keep startup light

    return MarkdownIt("commonmark")


def headings(text: str) -> list[tuple[int, int, str]]:
    """Return ``(offset, level, title)`` of each top-level heading, in order."""
    line_starts = [0]
    line_starts.extend(m.end() for m in NEWLINE.finditer(text))
    tokens = _parser().parse(text)
    found = []
    for i, token in enumerate(tokens):
        # level 0: headings nested in lists or quotes do not open document sections.
        if token.type == "heading_open" and token.level == 0 and token.map:
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            title = inline.content.strip() if inline is not None else ""
            found.append((line_starts[token.map[0]], int(token.tag[1:]), title))
    return found


def section_tree(text: str) -> Section:
    """Return the root section of ``text`` with every heading section beneath it."""
    root = Section(level=0, path=(), start=0, end=len(text))
    stack = [root]
    for offset, level, title in headings(text):
        while stack[-1].level >= level:
            stack.pop().end = offset
        parent = stack[-1]
        node = Section(level, parent.path + ((title,) if title else ()), offset)
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


@dataclass(slots=True)
class _Block:
    """A unit of grouping: a subsection, or a section's own text (``child`` None)."""

    start: int
    end: int
    n_tokens: int
    child: Section | None


@CHUNKERS.register("markdown")
class MarkdownChunker:
    """Cut Markdown at headings; each chunk's header is its heading path.

    A section that fits in ``size`` tokens is one chunk. A larger one is taken apart: its
    own text and its subsections are grouped greedily up to ``size`` (a group of several
    gets the section's path as header), subsections still too large recurse, and own
    text too large is cut by the recursive splitter (with ``overlap``). ``parent_id`` is
    ``doc_id@start:end``, the smallest section containing the whole chunk (``@0:len``
    for the document).

    Args:
        size: Maximum tokens of ``counter`` per chunk.
        overlap: Tokens repeated between pieces of one section cut by the splitter.
        counter: The tokenizer; the default tokenizer when None.
    """

    name = "markdown"

    def __init__(
        self,
        size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = 0,
        counter: TokenCounter | None = None,
    ) -> None:
        self.counter = counter if counter is not None else get_counter(DEFAULT_TOKENIZER)
        self.splitter = RecursiveSplitter(self.counter, size, overlap)
        self.size = size
        self.overlap = overlap

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` in document order.

        Raises:
            ConfigError: ``size`` is smaller than the tokens of a single character.
        """
        if not has_text(doc.text, 0, len(doc.text)):
            return []
        rows: list[Row] = []
        self._section(doc, section_tree(doc.text), None, rows)
        return to_chunks(doc, rows)

    def _row(self, doc: Document, start: int, end: int, n: int, node: Section) -> Row:
        parent_id = f"{doc.doc_id}@{node.start}:{node.end}"
        return Row(start, end, n, heading_header(doc.title, node.path), parent_id)

    def _section(self, doc: Document, node: Section, n: int | None, rows: list[Row]) -> None:
        """Emit ``node`` whole if it fits, else its own text and subsections in groups."""
        text = doc.text
        start, end = trim(text, node.start, node.end)
        if n is None:
            n = self.counter.count(text[start:end])
        if n <= self.size:
            rows.append(self._row(doc, start, end, n, node))
            return
        spans = [(node.start, node.own_end, None)] + [(c.start, c.end, c) for c in node.children]
        trimmed = [(*trim(text, a, b), child) for a, b, child in spans]
        trimmed = [(a, b, child) for a, b, child in trimmed if a < b]
        counts = count_many(self.counter, [text[a:b] for a, b, _ in trimmed])
        blocks = [_Block(a, b, c, child) for (a, b, child), c in zip(trimmed, counts, strict=True)]
        self._group(doc, node, blocks, rows)

    def _group(self, doc: Document, node: Section, blocks: list[_Block], rows: list[Row]) -> None:
        """Merge consecutive small blocks up to ``size``; take large ones apart."""
        i = 0
        while i < len(blocks):
            block = blocks[i]
            if block.n_tokens > self.size:
                if block.child is not None:
                    self._section(doc, block.child, block.n_tokens, rows)
                else:
                    for piece in self.splitter.split(doc.text, block.start, block.end):
                        rows.append(self._row(doc, *piece, node))
                i += 1
                continue
            stop, total = i, 0
            while stop < len(blocks) and total + blocks[stop].n_tokens <= self.size:
                total += blocks[stop].n_tokens
                stop += 1
            while stop - i > 1:  # the separators between blocks cost tokens too: check
                n = self.counter.count(doc.text[block.start : blocks[stop - 1].end])
                if n <= self.size:
                    rows.append(self._row(doc, block.start, blocks[stop - 1].end, n, node))
                    break
                stop -= 1
            else:
                owner = block.child if block.child is not None else node
                rows.append(self._row(doc, block.start, block.end, block.n_tokens, owner))
            i = stop

"""The ``pdf`` chunker: text extracted from a PDF, with page numbers in chunk headers.

The PDF loader joins the pages' text with a form feed (``\\f``) between pages, as
``pdftotext`` does, so every form feed in the document text is a page boundary. Each
page is a section of the ``markdown`` chunker's machinery: small consecutive pages merge
up to ``size``, a page above it is cut by the recursive splitter, and each chunk's
header names the file and the pages its text spans: ``manual.pdf p. 12-13``.
"""

from __future__ import annotations

import bisect
import functools

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.markdown import MarkdownChunker, Section, SectionRun, section_tree
from ctxselect.chunk.spans import Row
from ctxselect.types import Document

PAGE_BREAK = "\f"


@functools.lru_cache(maxsize=2)  # every row of one text asks; a str caches its hash
def page_starts(text: str) -> tuple[int, ...]:
    """Return the offset where each page starts: 0, then one past each form feed."""
    starts = [0]
    at = text.find(PAGE_BREAK)
    while at >= 0:
        starts.append(at + 1)
        at = text.find(PAGE_BREAK, at + 1)
    return tuple(starts)


def page_at(text: str, offset: int) -> int:
    """Return the 1-based page number holding ``text[offset]``."""
    return bisect.bisect_right(page_starts(text), offset)


def page_header(doc: Document, start: int, end: int) -> str:
    """Return ``"name p. 3"`` or ``"name p. 3-4"`` for the span ``text[start:end]``."""
    name = doc.doc_id.rsplit("/", 1)[-1]
    first, last = page_at(doc.text, start), page_at(doc.text, max(start, end - 1))
    pages = f"p. {first}" if first == last else f"p. {first}-{last}"
    return f"{name} {pages}" if name else pages


@CHUNKERS.register("pdf")
class PdfChunker(MarkdownChunker):
    """Cut extracted PDF text by pages; each chunk's header names its pages.

    Pages are sections: consecutive pages that fit merge up to ``size``, a longer page
    is cut by the recursive splitter (with ``overlap``). ``parent_id`` is the span of
    the page holding the chunk (the whole document's for chunks of several pages), so
    parent promotion can widen a selected piece to its page. A text without form feeds
    is one page.

    Args:
        size: Maximum tokens of ``counter`` per chunk.
        overlap: Tokens repeated between pieces of one page cut by the splitter.
        counter: The tokenizer; the default tokenizer when None.
    """

    name = "pdf"

    # 2 (with an overlap): the overlap is counted as one text (before: per piece, 1 over
    # at times); 3: a tiny opening piece joins the next one when they fit together; 4: a
    # cut inside a word never splits a grapheme cluster (a letter and its accents); 5: a
    # line of invisible characters separates paragraphs, and an overlap never starts
    # inside a grapheme cluster
    layout = "5"

    def _tree(self, text: str) -> Section:
        pages = [(start, start, 1, "") for start in page_starts(text)]
        return section_tree(text, pages)

    def _row(self, doc: Document, run: SectionRun) -> Row:
        parent_id = f"{doc.doc_id}@{run.owner.start}:{run.owner.end}"
        return Row(
            run.start, run.end, run.n_tokens, page_header(doc, run.start, run.end), parent_id
        )

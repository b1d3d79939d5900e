"""The ``auto`` chunker: ``markdown`` for Markdown, ``code`` for source files, ``tokens`` else."""

from __future__ import annotations

from ctxselect.chunk import code as _code
from ctxselect.chunk.base import CHUNKERS, Chunker
from ctxselect.chunk.markdown import MarkdownChunker
from ctxselect.chunk.pdf import PdfChunker
from ctxselect.chunk.rst import RstChunker
from ctxselect.chunk.sized import SizedChunker
from ctxselect.chunk.tokens import TokenChunker
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.tokens.base import TokenCounter
from ctxselect.types import Chunk, Document


@CHUNKERS.register("auto")
class AutoChunker(SizedChunker):
    """Chunk Markdown by headings, code by definitions, everything else by tokens.

    ``doc.kind == "markdown"`` goes to ``markdown``, ``"rst"`` to ``rst``, ``"pdf"`` to
    ``pdf``; ``doc.kind == "code"`` in a language
    with a tree-sitter grammar goes to ``code`` when the ``code`` extra is installed (its
    own fallback cuts files the grammar cannot parse by tokens); the rest to ``tokens``.
    All use the same ``size``, ``overlap`` and ``counter``.
    """

    name = "auto"

    def __init__(
        self,
        size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = 0,
        counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(size, overlap, counter)
        self.markdown = MarkdownChunker(size, overlap, self.counter)
        self.rst = RstChunker(size, overlap, self.counter)
        self.pdf = PdfChunker(size, overlap, self.counter)
        self.tokens = TokenChunker(size, overlap, self.counter)
        self.code = _code.CodeChunker(size, overlap, self.counter) if _code.available() else None

    @property
    def layout(self) -> str:  # type: ignore[override]
        """``2``: RST by sections and PDF by pages (before: RST as text); ``3``: Markdown
        front matter in no chunk; ``4``: front matter only as ingest reads it, overlaps
        counted as one text, and the code chunker's layout 2; ``5``: tiny opening pieces
        join the next one when they fit (layout 3 of the others); ``6``: cuts inside a word
        keep grapheme clusters whole (layout 4 of the others); ``7``: Markdown table heads
        in headers, invisible-only lines separate paragraphs, overlaps start at a grapheme
        cluster boundary (layout 5 of the others); ``+code``: source files by
        definitions, which depends on the ``code`` extra being installed."""
        return "7+code" if self.code is not None else "7"

    def chunker_for(self, doc: Document) -> Chunker:
        """Return the chunker ``doc`` is cut with."""
        if doc.kind == "markdown":
            return self.markdown
        if doc.kind in ("rst", "pdf"):  # RST sections; PDF pages
            return self.rst if doc.kind == "rst" else self.pdf
        if doc.kind == "code" and self.code is not None and _code.code_language(doc.doc_id):
            return self.code
        return self.tokens

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` from the chunker its kind calls for."""
        return self.chunker_for(doc).chunk(doc)

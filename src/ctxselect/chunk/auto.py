"""The ``auto`` chunker: ``markdown`` for Markdown documents, ``tokens`` for the rest."""

from __future__ import annotations

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.markdown import MarkdownChunker
from ctxselect.chunk.sized import SizedChunker
from ctxselect.chunk.tokens import TokenChunker
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.tokens.base import TokenCounter
from ctxselect.types import Chunk, Document


@CHUNKERS.register("auto")
class AutoChunker(SizedChunker):
    """Chunk ``doc.kind == "markdown"`` by headings, everything else by tokens.

    Both use the same ``size``, ``overlap`` and ``counter``.
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
        self.tokens = TokenChunker(size, overlap, self.counter)

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` from the chunker its kind calls for."""
        chunker = self.markdown if doc.kind == "markdown" else self.tokens
        return chunker.chunk(doc)

"""The ``tokens`` chunker: recursive splitting under a hard token limit, optional overlap."""

from __future__ import annotations

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.recursive import RecursiveSplitter
from ctxselect.chunk.sized import SizedChunker
from ctxselect.chunk.spans import Row, to_chunks
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.tokens.base import TokenCounter
from ctxselect.types import Chunk, Document


@CHUNKERS.register("tokens")
class TokenChunker(SizedChunker):
    """Cut documents into chunks of at most ``size`` tokens, never more.

    Boundaries are tried coarsest first (paragraphs, lines, sentences, words, then
    characters) and pieces are packed greedily up to the limit. Each chunk's header is the
    document title.

    Args:
        size: Maximum tokens of ``counter`` per chunk.
        overlap: Tokens (at most) repeated from the end of each chunk at the start of the
            next; smaller than ``size``.
        counter: The tokenizer; the default tokenizer when None.
    """

    name = "tokens"

    # 2 (with an overlap): the overlap is counted as one text (before: per piece, 1 over
    # at times); 3: a tiny opening piece joins the next one when they fit together; 4: a
    # cut inside a word never splits a grapheme cluster (a letter and its accents); 5: a
    # line of invisible characters only separates paragraphs, and overlaps start at a
    # grapheme cluster boundary (a cluster between size - overlap and size stays whole)
    layout = "5"

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
        pieces = self.splitter.split(doc.text)
        return to_chunks(doc, (Row(p.start, p.end, p.n_tokens, doc.title) for p in pieces))

"""The ``paragraph`` chunker: the chapter's rule, whole paragraphs packed up to a size."""

from __future__ import annotations

from ctxselect.chunk.base import CHUNKERS
from ctxselect.chunk.sized import SizedChunker
from ctxselect.chunk.spans import Row, blank_line, check_size, to_chunks, trim
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.errors import ConfigError
from ctxselect.tokens.base import TokenCounter
from ctxselect.tokens.counters import count_many
from ctxselect.types import Chunk, Document

# A line break is CRLF, LF or a lone CR (API text is not normalised as ingest normalises
# files); the atomic group keeps one CRLF from counting as two breaks.
LINE_BREAK = r"(?>\r\n|\r|\n)"


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Return the trimmed paragraphs of ``text`` holding visible text, as ``(start, end)``.

    Paragraphs are separated by blank lines: lines without a visible character, such as
    a line holding only a zero-width space (:func:`ctxselect.chunk.spans.blank_line`).
    """
    spans = []
    start = 0
    for match in blank_line(LINE_BREAK).finditer(text):
        spans.append(trim(text, start, match.start()))
        start = match.end()
    spans.append(trim(text, start, len(text)))
    return [(a, b) for a, b in spans if a < b]


@CHUNKERS.register("paragraph")
class ParagraphChunker(SizedChunker):
    """Pack whole paragraphs into chunks of about ``size`` characters (the chapter's rule).

    Paragraphs are appended to the current chunk; when adding the next one would take the
    chunk past ``size`` characters (from the chunk's first paragraph to the new one's end)
    and the chunk is not empty, the chunk is closed. Paragraphs are never cut, so a
    paragraph longer than ``size`` is one oversized chunk. ``size`` is a target in
    characters, not a token limit; ``n_tokens`` is still counted in ``counter``.

    Args:
        size: Target chunk length in characters.
        overlap: Must be 0: the rule has no overlap.
        counter: The tokenizer for ``n_tokens``; the default tokenizer when None.
    """

    name = "paragraph"
    # 2: a lone CR is a line break, and a paragraph without a visible character (only
    # zero-width spaces, a BOM...) is in no chunk (before: one chunk, or a chunk of its own);
    # 3: a line of invisible characters only (a zero-width space) separates paragraphs
    layout = "3"

    def __init__(
        self,
        size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = 0,
        counter: TokenCounter | None = None,
    ) -> None:
        check_size(self.name, size, overlap)
        if overlap:
            raise ConfigError(
                f"the paragraph chunker never overlaps chunks, got overlap {overlap}: "
                "set overlap to 0, or use the tokens chunker for overlapping chunks"
            )
        super().__init__(size, overlap, counter)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Return the ``(start, end)`` span of each chunk of ``text``, in order."""
        chunks: list[tuple[int, int]] = []
        first = last = -1
        for start, end in paragraph_spans(text):
            if first >= 0 and end - first > self.size:
                chunks.append((first, last))
                first = -1
            if first < 0:
                first = start
            last = end
        if first >= 0:
            chunks.append((first, last))
        return chunks

    def chunk(self, doc: Document) -> list[Chunk]:
        """Return the chunks of ``doc`` in document order."""
        spans = self.spans(doc.text)
        counts = count_many(self.counter, [doc.text[a:b] for a, b in spans])
        rows = (Row(a, b, n, doc.title) for (a, b), n in zip(spans, counts, strict=True))
        return to_chunks(doc, rows)

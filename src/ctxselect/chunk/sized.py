"""What every chunker is built from: a size, an overlap and a token counter."""

from __future__ import annotations

from ctxselect.config import DEFAULT_CHUNK_SIZE, DEFAULT_TOKENIZER
from ctxselect.tokens.base import TokenCounter
from ctxselect.tokens.counters import get_counter


class SizedChunker:
    """Base of the chunkers: keeps ``size``, ``overlap`` and the counter ``n_tokens`` uses.

    Args:
        size: The chunk size (tokens of ``counter``; characters for ``paragraph``).
        overlap: Tokens repeated between consecutive chunks, where the chunker supports it.
        counter: The tokenizer; the default tokenizer when None.
    """

    name = ""
    layout = ""
    """Names how this chunker cuts a given text; it changes whenever the chunks it makes
    from the same document change (a new route, a new grammar). An index records it and
    re-chunks every document when it differs. Empty: unchanged since indexes began
    recording it."""

    def __init__(
        self,
        size: int = DEFAULT_CHUNK_SIZE,
        overlap: int = 0,
        counter: TokenCounter | None = None,
    ) -> None:
        self.counter = counter if counter is not None else get_counter(DEFAULT_TOKENIZER)
        self.size = size
        self.overlap = overlap

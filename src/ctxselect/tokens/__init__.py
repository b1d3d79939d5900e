"""Token counters: exact, named tokenizers behind the ``TokenCounter`` seam."""

from ctxselect.tokens.base import TOKENIZERS, TokenCounter
from ctxselect.tokens.bpe import TiktokenCounter
from ctxselect.tokens.counters import count_many, get_counter
from ctxselect.tokens.estimate import CharsPerTokenCounter
from ctxselect.tokens.memo import MemoCounter

__all__ = [
    "TOKENIZERS",
    "CharsPerTokenCounter",
    "MemoCounter",
    "TiktokenCounter",
    "TokenCounter",
    "count_many",
    "get_counter",
]

"""The TokenCounter seam: a named function from text to a token count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ctxselect.registry import Registry


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text in one named tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to."""
        ...


TOKENIZERS: Registry[Callable[..., TokenCounter]] = Registry("tokenizer")

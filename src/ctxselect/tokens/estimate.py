"""The chapter's token estimate: characters divided by four, rounded up."""

from __future__ import annotations

from collections.abc import Sequence

from ctxselect.errors import ConfigError
from ctxselect.tokens.base import TOKENIZERS


@TOKENIZERS.register("chars4")
class CharsPerTokenCounter:
    """Estimate tokens as ``ceil(len(text) / chars_per_token)``; no dependency, instant.

    The rule of thumb fits English prose; code, numbers and most other languages have
    more tokens per character, so it runs low on them. Use an exact counter when a limit
    has to hold.
    """

    def __init__(self, name: str = "chars4", chars_per_token: int = 4) -> None:
        if chars_per_token < 1:
            raise ConfigError(f"chars_per_token must be a positive integer, got {chars_per_token}")
        self.name = name
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        """Return ``ceil(len(text) / chars_per_token)``."""
        return -(-len(text) // self.chars_per_token)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Return the estimate for each text, in order."""
        per = self.chars_per_token
        return [-(-len(text) // per) for text in texts]

    def __repr__(self) -> str:
        return f"CharsPerTokenCounter(name={self.name!r}, chars_per_token={self.chars_per_token})"

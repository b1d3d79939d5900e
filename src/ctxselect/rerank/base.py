"""The Reranker seam: ranked Hits -> the same hits in a better order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ctxselect.registry import Registry
from ctxselect.types import Hit


@runtime_checkable
class Reranker(Protocol):
    """Reorders the hits of one query; never adds a chunk the retriever did not return.

    The result is best first with ranks from 1 and scores in the reranker's own scale,
    non-increasing down the list.
    """

    name: str

    def rerank(self, query: str, hits: Sequence[Hit], k: int | None = None) -> list[Hit]:
        """Return ``hits`` reordered for ``query``, cut to the first ``k`` when given."""
        ...


RERANKERS: Registry[Callable[..., Reranker]] = Registry("reranker")
"""reranker name -> factory taking keyword options."""


def make_reranker(name: str, **options: Any) -> Reranker:
    """Build the reranker registered as ``name`` (``mmr``, ``cross-encoder``)."""
    return RERANKERS.get(name)(**options)


def reranked(hits: Sequence[Hit], order: Sequence[int], scores: Sequence[float]) -> list[Hit]:
    """Return ``hits[order[i]]`` with rank ``i + 1`` and score ``scores[i]``."""
    out = []
    for rank, (i, score) in enumerate(zip(order, scores, strict=True), 1):
        h = hits[i]
        out.append(
            Hit(
                rank,
                h.chunk_id,
                h.doc_id,
                float(score),
                h.start,
                h.end,
                h.n_tokens,
                h.text,
                h.header,
            )
        )
    return out


def check_depth(k: int | None) -> None:
    """Raise ConfigError unless ``k`` is None or a whole number >= 1."""
    from ctxselect.errors import ConfigError

    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"k (number of hits) must be a whole number >= 1, got {k!r}")

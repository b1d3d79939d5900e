"""The Retriever seam: query -> ranked Hits, and a term-by-term explanation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ctxselect.retrieve.filters import RowMask
from ctxselect.types import ChunkTable, Explanation, Hit, Rows


@runtime_checkable
class Retriever(Protocol):
    """Ranks the chunks of one :class:`ChunkTable` for a query.

    Hits are best-first, rank starts at 1, ties break on ``chunk_id`` (table row order).
    Chunks scoring exactly 0 are not returned. With a ``mask`` (a filter's rows, see
    ``retrieve/filters.py``) only the rows it allows are ranked, so ``k`` allowed hits
    come back whenever ``k`` allowed chunks score; ``filters.deepened`` does that for a
    ranking that cannot skip rows itself.
    """

    mode: str

    def search(self, query: str, k: int = 10, *, mask: RowMask | None = None) -> list[Hit]:
        """Return the ``k`` best hits for ``query`` among the rows ``mask`` allows."""
        ...

    def search_many(
        self, queries: Mapping[str, str], k: int = 10, *, mask: RowMask | None = None
    ) -> dict[str, list[Hit]]:
        """Return ``{qid: hits}`` for every query, among the rows ``mask`` allows."""
        ...

    def explain(self, query: str, chunk_id: str) -> Explanation:
        """Take the score of ``chunk_id`` for ``query`` apart, term by term."""
        ...

    def arrays(self) -> dict[str, np.ndarray]:
        """The index artefacts to persist; ``load`` rebuilds the retriever from them."""
        ...


class RetrieverClass(Protocol):
    """A mode's retriever class: builds or loads its retriever (see ``retrieve.modes``)."""

    mode: str

    def build(self, table: ChunkTable, **params: Any) -> Retriever:
        """Index ``table`` from scratch."""
        ...

    def load(self, table: Rows, arrays: Mapping[str, np.ndarray], **params: Any) -> Retriever:
        """Rebuild the retriever from the arrays ``arrays()`` returned (rows may be lazy)."""
        ...

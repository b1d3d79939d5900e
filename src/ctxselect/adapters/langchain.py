"""ctxselect's budgeted selection as a LangChain retriever (extra ``ctxselect[langchain]``).

:class:`CtxselectRetriever` subclasses ``langchain_core.retrievers.BaseRetriever``, so it is
a runnable: ``invoke``/``ainvoke``, ``batch``, and chains such as ``retriever |
format_docs``. Each query returns the pieces ``Index.select`` chose within the budget, in
prompt order, as ``Document``\\ s whose metadata holds the piece's ids, offsets, header,
score, P(relevant) and tokens, and the selection's ``tokens_used``, ``budget`` and
``stop`` (see :mod:`ctxselect.adapters.pieces`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ctxselect._require import require

require("langchain_core", extra="langchain", feature="ctxselect.adapters.langchain")

from langchain_core.callbacks import (  # noqa: E402  (after the install hint above)
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402

from ctxselect import api  # noqa: E402
from ctxselect.adapters import pieces  # noqa: E402
from ctxselect.adapters.pieces import IndexLike, SelectOptions  # noqa: E402
from ctxselect.agent import limits  # noqa: E402
from ctxselect.config import DEFAULT_FORMAT, DEFAULT_PACKER  # noqa: E402


class CtxselectRetriever(BaseRetriever):
    """A LangChain retriever that returns ctxselect's budgeted selection for a query.

    Example:
        >>> retriever = CtxselectRetriever(index=".ctxselect/demo", budget=1000)
        >>> docs = retriever.invoke("How do I split Markdown by headings?")

    Attributes:
        index: The opened index (pass an ``Index`` or an index folder).
        budget: Tokens of context per query, framing included; never exceeded.
        mode: Retrieval mode (default: the index's).
        stop: ``auto``, ``none`` or a P(relevant) threshold (see ``Index.select``).
        packer: Packer name. format: Framing the pieces are costed in.
        k: Ranked chunks considered (default: enough to fill the budget).
        mmr: Maximal marginal relevance λ (an index with dense vectors).
        promote: Send whole sections for their selected children.
    """

    index: api.Index
    budget: int = limits.DEFAULT_BUDGET
    mode: str | None = None
    stop: str | float = api.DEFAULT_STOP
    packer: str = DEFAULT_PACKER
    format: str = DEFAULT_FORMAT
    k: int | None = None
    mmr: float | None = None
    promote: bool = False

    def __init__(self, index: IndexLike, **fields: Any) -> None:
        """Open ``index`` if it is a folder, and check the options against it.

        The checks run here, before pydantic's, so a bad option raises ctxselect's own
        error (``ConfigError``, ``UnknownNameError``), not a ``ValidationError``, and
        pydantic never coerces one (``budget="800"`` is refused, as in LlamaIndex).

        Raises:
            IndexNotFoundError: ``index`` names a folder without an index.
            ConfigError: An option the index cannot apply (see ``pieces.check_options``),
                or a name that is not a field (pydantic would ignore it).
        """
        pieces.check_names("CtxselectRetriever", fields, type(self).model_fields)
        opened = pieces.open_or_take(index)
        # checked before pydantic sees them: it would coerce "800" or wrap the error
        given = {name: fields.pop(name) for name in pieces.option_names() if name in fields}
        options = pieces.check_options(opened, SelectOptions(**given))
        super().__init__(**{**fields, **pieces.as_fields(options), "index": opened})

    def options(self) -> SelectOptions:
        """The ``Index.select`` arguments this retriever passes."""
        return SelectOptions(
            self.budget, self.mode, self.stop, self.packer, self.format,
            self.k, self.mmr, self.promote,
        )  # fmt: skip

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(query)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        # the index reads are blocking file reads: run them off the event loop
        return await asyncio.to_thread(self._documents, query)

    def _documents(self, query: str) -> list[Document]:
        selection = pieces.select(self.index, query, self.options())
        return [
            Document(page_content=p.text, metadata=dict(p.metadata), id=p.id)
            for p in pieces.pieces(selection)
        ]


__all__ = ["CtxselectRetriever"]

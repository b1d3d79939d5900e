"""ctxselect's budgeted selection as a LlamaIndex retriever (extra ``ctxselect[llamaindex]``).

:class:`CtxselectRetriever` subclasses llama-index-core's ``BaseRetriever``, so it answers
``retrieve``/``aretrieve`` and plugs into a ``RetrieverQueryEngine``. Each query returns
the pieces ``Index.select`` chose within the budget, in prompt order, as
``NodeWithScore``\\ s: a ``TextNode`` with the piece's offsets (``start_char_idx``,
``end_char_idx``), its document as the SOURCE relationship (``node.ref_doc_id``), and
metadata holding the piece's ids, header, score, P(relevant) and tokens and the
selection's ``tokens_used``, ``budget`` and ``stop`` (see :mod:`ctxselect.adapters.pieces`).
Only ``doc_id`` and ``header`` reach the LLM's prompt; the rest is excluded from it.

llama-index-core runs offline with the NLTK data and tiktoken file it ships, as long as
``NLTK_DATA`` and ``TIKTOKEN_CACHE_DIR`` are unset (``docs/16-adapters.md``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ctxselect._require import require

require("llama_index.core", extra="llamaindex", feature="ctxselect.adapters.llamaindex")

from llama_index.core.base.base_retriever import (  # noqa: E402  (after the install hint)
    BaseRetriever,
)
from llama_index.core.schema import (  # noqa: E402
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from ctxselect.adapters import pieces  # noqa: E402
from ctxselect.adapters.pieces import IndexLike, Piece, SelectOptions  # noqa: E402
from ctxselect.errors import ConfigError  # noqa: E402
from ctxselect.types import Selection  # noqa: E402


class CtxselectRetriever(BaseRetriever):
    """A LlamaIndex retriever that returns ctxselect's budgeted selection for a query.

    Example:
        >>> retriever = CtxselectRetriever(".ctxselect/demo", budget=1000)
        >>> nodes = retriever.retrieve("How do I split Markdown by headings?")
    """

    def __init__(
        self, index: IndexLike, *, callback_manager: Any = None, verbose: bool = False,
        **options: Any,
    ) -> None:  # fmt: skip
        """Open ``index`` if it is a folder, and check the options against it.

        Args:
            index: An opened ``Index`` or an index folder.
            callback_manager: LlamaIndex's callback manager (default: ``Settings``').
            verbose: LlamaIndex's verbose flag.
            **options: ``Index.select``'s arguments: budget, mode, stop, packer,
                format, k, mmr, promote (see :class:`~ctxselect.adapters.pieces.SelectOptions`).

        Raises:
            IndexNotFoundError: ``index`` names a folder without an index.
            ConfigError: An option the index cannot apply (see ``pieces.check_options``),
                or a name ``Index.select`` does not take.
        """
        pieces.check_names("CtxselectRetriever", options, pieces.option_names())
        self.index = pieces.open_or_take(index)
        self.options = pieces.check_options(self.index, SelectOptions(**options))
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def retrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        """LlamaIndex's ``retrieve``, after checking the query is a str or a QueryBundle.

        Raises:
            ConfigError: The query is neither (LlamaIndex's own check would raise a
                pydantic ValidationError about one of its events instead).
        """
        return super().retrieve(_checked(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        """:meth:`retrieve`, async."""
        return await super().aretrieve(_checked(str_or_query_bundle))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(pieces.select(self.index, query_bundle.query_str, self.options))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # the index reads are blocking file reads: run them off the event loop
        selection = await asyncio.to_thread(
            pieces.select, self.index, query_bundle.query_str, self.options
        )
        return _nodes(selection)


def _checked(query: object) -> str | QueryBundle:
    if isinstance(query, str | QueryBundle):
        return query
    raise ConfigError(
        f"query must be a str or a llama_index QueryBundle, got {type(query).__name__} "
        f"{query!r:.60}: pass the question as text"
    )


def _nodes(selection: Selection) -> list[NodeWithScore]:
    return [NodeWithScore(node=_node(p), score=p.score) for p in pieces.pieces(selection)]


def _node(piece: Piece) -> TextNode:
    hidden = [key for key in piece.metadata if key not in pieces.PROMPT_KEYS]
    return TextNode(
        id_=piece.id,
        text=piece.text,
        metadata=dict(piece.metadata),
        start_char_idx=piece.start,
        end_char_idx=piece.end,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(piece.metadata),
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=piece.doc_id)},
    )


__all__ = ["CtxselectRetriever"]

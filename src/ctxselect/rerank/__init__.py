"""rerank: Hits -> Hits (MMR diversity, a cross-encoder on disk)."""

from ctxselect.rerank.base import RERANKERS, Reranker, make_reranker
from ctxselect.rerank.cross_encoder import CrossEncoderReranker
from ctxselect.rerank.mmr import MMRReranker, mmr_order

__all__ = [
    "RERANKERS",
    "CrossEncoderReranker",
    "MMRReranker",
    "Reranker",
    "make_reranker",
    "mmr_order",
]

"""Read path: query -> ranked Hits. Importing this package registers every mode."""

from ctxselect.retrieve.base import RETRIEVERS, Retriever
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.dense import EMBEDDING_MODES, DenseRetriever
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.retrieve.segments import SegmentedRetriever, length_drift, load_segments
from ctxselect.retrieve.tfidf import TfidfRetriever, TfidfSumRetriever

__all__ = [
    "EMBEDDING_MODES",
    "RETRIEVERS",
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "SegmentedRetriever",
    "TfidfRetriever",
    "TfidfSumRetriever",
    "length_drift",
    "load_segments",
]

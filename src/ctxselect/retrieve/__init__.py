"""Read path: query -> ranked Hits. ``MODES`` (retrieve/modes.py) is the table of modes."""

from ctxselect.retrieve.base import Retriever
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.dense import DenseRetriever
from ctxselect.retrieve.hybrid import HybridRetriever
from ctxselect.retrieve.modes import MODES, ModeContext, ModeSpec
from ctxselect.retrieve.segments import SegmentedRetriever, length_drift, load_segments
from ctxselect.retrieve.tfidf import TfidfRetriever, TfidfSumRetriever

__all__ = [
    "MODES",
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "ModeContext",
    "ModeSpec",
    "Retriever",
    "SegmentedRetriever",
    "TfidfRetriever",
    "TfidfSumRetriever",
    "length_drift",
    "load_segments",
]

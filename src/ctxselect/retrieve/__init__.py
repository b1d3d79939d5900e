"""Read path: query -> ranked Hits. Importing this package registers every mode."""

from ctxselect.retrieve.base import RETRIEVERS, Retriever
from ctxselect.retrieve.bm25 import BM25Retriever
from ctxselect.retrieve.tfidf import TfidfRetriever, TfidfSumRetriever

__all__ = ["RETRIEVERS", "BM25Retriever", "Retriever", "TfidfRetriever", "TfidfSumRetriever"]

"""Chunkers: Document -> Chunks with exact offsets, one file per strategy."""

from ctxselect.chunk.auto import AutoChunker
from ctxselect.chunk.base import CHUNKERS, Chunker
from ctxselect.chunk.code import CodeChunker, token_fallbacks
from ctxselect.chunk.factory import chunk_layout, make_chunker
from ctxselect.chunk.markdown import MarkdownChunker
from ctxselect.chunk.paragraph import ParagraphChunker
from ctxselect.chunk.recursive import RecursiveSplitter
from ctxselect.chunk.tokens import TokenChunker

__all__ = [
    "CHUNKERS",
    "AutoChunker",
    "Chunker",
    "CodeChunker",
    "MarkdownChunker",
    "ParagraphChunker",
    "RecursiveSplitter",
    "TokenChunker",
    "chunk_layout",
    "make_chunker",
    "token_fallbacks",
]

"""Ingest: sources -> Document (loaders, normalisation, ignore rules, change detection)."""

from __future__ import annotations

from ctxselect.ingest.changes import ChangeSet, diff_documents
from ctxselect.ingest.files import DEFAULT_MAX_BYTES, load_paths
from ctxselect.ingest.report import IngestReport, IngestResult
from ctxselect.ingest.text import content_hash, normalize

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ChangeSet",
    "IngestReport",
    "IngestResult",
    "content_hash",
    "diff_documents",
    "load_paths",
    "normalize",
]

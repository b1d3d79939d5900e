"""Ingest: sources -> Document (loaders, normalisation, ignore rules, change detection),
and the executors that spread ingestion over worker processes."""

from __future__ import annotations

from ctxselect.ingest.changes import ChangeSet, diff_documents
from ctxselect.ingest.executor import (
    DEFAULT_EXECUTOR,
    EXECUTORS,
    Executor,
    LocalExecutor,
    check_workers,
    executor_names,
    make_executor,
)
from ctxselect.ingest.files import DEFAULT_MAX_BYTES, base_folder, keep_rescannable, load_paths
from ctxselect.ingest.ray_executor import RayExecutor
from ctxselect.ingest.report import IngestReport, IngestResult
from ctxselect.ingest.text import content_hash, normalize

__all__ = [
    "DEFAULT_EXECUTOR",
    "DEFAULT_MAX_BYTES",
    "EXECUTORS",
    "ChangeSet",
    "Executor",
    "IngestReport",
    "IngestResult",
    "LocalExecutor",
    "RayExecutor",
    "base_folder",
    "check_workers",
    "content_hash",
    "diff_documents",
    "executor_names",
    "keep_rescannable",
    "load_paths",
    "make_executor",
    "normalize",
]

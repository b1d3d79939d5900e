"""Chunk and embed on an executor's workers while this process stays the only writer.

An index run with ``workers`` > 1 (or the ray executor) sends batches of new documents to
the workers, which chunk them and send the chunks back; then it looks every chunk up in
the index's vector cache (by model and content hash) and sends only the missing texts
to the workers to embed. Each batch of vectors is written to the cache as it arrives,
so a run interrupted half-way keeps what it embedded and the next run embeds only the
rest. The commit itself (chunks, postings, dense segment) is the serial code path: the
dense writer then finds every vector in the cache and loads no model. Texts are sent in
the order the serial path embeds them (by length, in batches of the same size), so the
vectors are the ones a serial run makes.

Each worker makes the embedder once (kept in a module global of its process) and reuses
it for every batch; an embedder registered by name is made by name in the worker, any
other (a small object given in Python) is sent along with the texts.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm import tqdm

from ctxselect import chunk as _chunk
from ctxselect import embed as _embed
from ctxselect import ingest as _ingest
from ctxselect.config import DEFAULT_EMBED_BATCH, ChunkSpec
from ctxselect.errors import ConfigError, IndexMismatchError
from ctxselect.index.writer import indexed_text
from ctxselect.manifest import EmbedderSpec
from ctxselect.types import Chunk, Document

ExecutorArg = str | _ingest.Executor
"""An executor: a registry name (``local``, ``ray``) or an :class:`~ctxselect.ingest.Executor`."""

EMBED_TASK = 8 * DEFAULT_EMBED_BATCH
"""Most texts per embedding task: whole model batches, so batches match a serial run's.
Smaller runs are cut into at least four tasks per worker, so every worker embeds."""
MAX_CHUNK_TASK = 256
"""Most documents per chunking task."""
SEND_LIMIT = 1_000_000
"""Largest pickled embedder sent along with each batch; a larger one is made by name."""


@dataclass(frozen=True, slots=True)
class EmbedderSource:
    """How a worker gets the index's embedder.

    Attributes:
        name: Registry name (made by name when ``model`` is None).
        model_id: The model the index records; a worker's model must match it.
        model: A small embedder object to use as it is, or None.
        threads: torch threads per worker (None: leave the runtime's setting).
    """

    name: str
    model_id: str
    model: _embed.Embedder | None = None
    threads: int | None = None


@dataclass(frozen=True, slots=True)
class ChunkTask:
    """Documents for a worker to chunk with ``spec``."""

    spec: ChunkSpec
    documents: tuple[Document, ...]


@dataclass(frozen=True, slots=True)
class EmbedTask:
    """Non-blank texts for a worker to embed with the embedder ``source`` names."""

    source: EmbedderSource
    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EmbeddedBatch:
    """A worker's answer to an :class:`EmbedTask`.

    Attributes:
        vectors: One float32 row per text.
        worker: The worker's process id.
        loads: How many models that worker process has made so far (1: made once).
    """

    vectors: np.ndarray
    worker: int
    loads: int


@dataclass(frozen=True, slots=True)
class Work:
    """What a write hands to the workers: the executor, and the embedder if any."""

    executor: _ingest.Executor
    embedder: EmbedderSource | None = None


# Per-worker state: a worker process makes each chunker and model once.
_CHUNKERS: dict[ChunkSpec, Any] = {}
_MODELS: dict[str, _embed.Embedder] = {}
_LOADS = [0]


def chunk_task(task: ChunkTask) -> list[Chunk]:
    """Chunk a batch of documents (runs in a worker)."""
    chunker = _CHUNKERS.get(task.spec)
    if chunker is None:
        chunker = _CHUNKERS[task.spec] = _chunk.make_chunker(task.spec)
    return [c for doc in task.documents for c in chunker.chunk(doc)]


def embed_task(task: EmbedTask) -> EmbeddedBatch:
    """Embed a batch of texts with this worker's model, made on its first batch."""
    model = _MODELS.get(task.source.model_id)
    if model is None:
        model = _MODELS[task.source.model_id] = _make_model(task.source)
        _LOADS[0] += 1
    vectors = _embed.embed_texts(model, task.texts, batch_size=DEFAULT_EMBED_BATCH)
    return EmbeddedBatch(vectors, os.getpid(), _LOADS[0])


def _make_model(source: EmbedderSource) -> _embed.Embedder:
    model = source.model or _embed.make_embedder(source.name, model_id=source.model_id)
    if model.model_id != source.model_id:
        raise IndexMismatchError(
            f"a worker made embedder {source.name!r} by name as {model.model_id!r}, but the "
            f"index records {source.model_id!r}: install the same model version on every "
            f"worker (an embedder made with other options in Python cannot be made by name: "
            f"index it with workers=1)"
        )
    torch = sys.modules.get("torch")
    if source.threads and torch is not None:  # workers share the cores: no oversubscription
        torch.set_num_threads(source.threads)
    return model


def embedder_source(
    spec: EmbedderSpec, given: _embed.Embedder | None, executor: _ingest.Executor
) -> EmbedderSource:
    """How the workers of ``executor`` make the embedder ``spec`` records.

    A registered embedder (``given`` None, or an instance of the class registered under
    ``spec.name``) is made by name in each worker: a model is never pickled. Any other
    object is sent along if it pickles in under :data:`SEND_LIMIT` bytes.

    Raises:
        ConfigError: ``given`` is neither registered nor small enough to send.
    """
    registered = spec.name in _embed.EMBEDDERS.names()
    by_name = given is None or (registered and type(given) is _embed.EMBEDDERS.get(spec.name))
    model = None if by_name or not _sendable(given) else given
    if model is None and not by_name:
        raise ConfigError(
            f"embedder {spec.name!r} is not registered and cannot be sent to workers "
            f"(it does not pickle in under {SEND_LIMIT:,} bytes): register it in "
            f"ctxselect.embed.EMBEDDERS, or index with workers=1"
        )
    threads = None
    if executor.name == "local":
        threads = max(1, (os.cpu_count() or 1) // executor.workers)
    return EmbedderSource(spec.name, spec.model_id, model, threads)


class _TooLarge(Exception):
    """Raised by :class:`_Counter` to stop pickling past the limit."""


class _Counter:
    """A write-only file that counts bytes and stops a pickle past ``SEND_LIMIT``."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > SEND_LIMIT:
            raise _TooLarge
        return len(data)


def _sendable(model: object) -> bool:
    try:
        pickle.Pickler(_Counter()).dump(model)  # stops early: a model is never copied whole
    except (_TooLarge, pickle.PicklingError, TypeError, AttributeError):
        return False
    return True


def chunk_documents(
    executor: _ingest.Executor, documents: Sequence[Document], spec: ChunkSpec, *, progress: bool
) -> list[Chunk]:
    """Chunk ``documents`` on the workers; the chunks come back in document order."""
    size = max(1, min(MAX_CHUNK_TASK, -(-len(documents) // (4 * executor.workers))))
    tasks = [
        ChunkTask(spec, tuple(documents[i : i + size])) for i in range(0, len(documents), size)
    ]
    chunks: list[Chunk] = []
    bar = tqdm(total=len(documents), desc="chunking", unit="doc", disable=not progress)
    with bar:
        for task, done in zip(tasks, executor.map(chunk_task, tasks), strict=True):
            chunks.extend(done)
            bar.update(len(task.documents))
    return chunks


def embed_missing(
    executor: _ingest.Executor,
    chunks: Sequence[Chunk],
    cache: _embed.VectorCache,
    source: EmbedderSource,
    *,
    progress: bool,
) -> list[EmbeddedBatch]:
    """Embed on the workers the chunks whose vectors ``cache`` lacks, and store them there.

    Returns:
        The workers' batches, in order (their vectors are in ``cache`` already).
    """
    text_of: dict[str, str] = {}
    for c in sorted(chunks, key=lambda c: c.chunk_id):  # the order the dense writer embeds
        text = indexed_text(c)
        if not _embed.is_blank(text):
            text_of.setdefault(_embed.text_key(text), text)
    found = cache.get_many(source.model_id, list(text_of))
    missing = sorted((k for k in text_of if k not in found), key=lambda k: len(text_of[k]))
    size = _task_size(len(missing), executor.workers)
    groups = [missing[i : i + size] for i in range(0, len(missing), size)]
    tasks = [EmbedTask(source, tuple(text_of[k] for k in keys)) for keys in groups]
    label = f"embedding ({source.name}, {executor.workers} {executor.name} workers)"
    bar = tqdm(total=len(missing), desc=label, unit="chunk", file=sys.stderr, disable=not progress)
    batches: list[EmbeddedBatch] = []
    with bar:
        for keys, done in zip(groups, executor.map(embed_task, tasks), strict=True):
            cache.put_many(source.model_id, dict(zip(keys, done.vectors, strict=True)))
            batches.append(done)
            bar.update(len(keys))
    return batches


def _task_size(texts: int, workers: int) -> int:
    """Texts per embedding task: a whole number of model batches, at most EMBED_TASK,
    small enough that each worker gets about four tasks (the last ones hold the longest
    texts, so finer tasks keep the workers busy to the end)."""
    batches = -(-texts // (4 * workers * DEFAULT_EMBED_BATCH))
    return max(DEFAULT_EMBED_BATCH, min(EMBED_TASK, batches * DEFAULT_EMBED_BATCH))


@contextlib.contextmanager
def executor_for(
    executor: ExecutorArg, workers: int, ray_address: str | None
) -> Iterator[_ingest.Executor | None]:
    """The executor a write uses (None: the serial path), closed afterwards if made here.

    Raises:
        ConfigError: ``workers`` < 1, an address without the ray executor, or ``workers``
            beside an executor object that has another number of workers.
        UnknownNameError: ``executor`` is not a registered name (the valid ones listed).
        MissingExtraError: The ray executor without ``ctxselect[ray]``.
    """
    _ingest.check_workers(workers)
    if not isinstance(executor, str):
        if workers not in (1, executor.workers) or ray_address is not None:
            raise ConfigError(
                f"the executor given has {executor.workers} workers and its own address: "
                f"leave workers and ray_address out (got {workers}, {ray_address!r})"
            )
        yield executor  # the caller's to close
        return
    _ingest.EXECUTORS.check(executor)
    if executor == _ingest.DEFAULT_EXECUTOR and workers == 1 and ray_address is None:
        yield None  # one local worker: the serial path, no pool
        return
    made = _ingest.make_executor(executor, workers, address=ray_address)
    try:
        yield made
    finally:
        made.close()


__all__ = [
    "EMBED_TASK",
    "ChunkTask",
    "EmbedTask",
    "EmbeddedBatch",
    "EmbedderSource",
    "ExecutorArg",
    "Work",
    "chunk_documents",
    "chunk_task",
    "embed_missing",
    "embed_task",
    "embedder_source",
    "executor_for",
]

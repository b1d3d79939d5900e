"""Real embeddings for the dense tests: each collection embedded at most once per run.

Vectors are cached on disk by model and content hash under pytest's cache folder
(``.pytest_cache/d/ctxselect-vectors``), so a CI run, which starts with an empty cache,
embeds SciFact and NFCorpus once, and later runs reuse them. The model is loaded once.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from ctxselect import ChunkSpec, ChunkTable, chunk_file
from ctxselect.embed import CachedEmbedder, FileVectorCache, make_embedder
from ctxselect.eval import load_qrels, read_queries
from ctxselect.retrieve import DenseRetriever
from ctxselect.types import Qrels


@functools.cache
def minilm() -> object:
    """The real model, loaded once per test process."""
    return make_embedder("minilm")


@functools.cache
def beir_table(folder: Path) -> ChunkTable:
    """One chunk per document (header = title), as the published BM25 figures use."""
    chunks = chunk_file(folder / "corpus.jsonl", ChunkSpec(chunker="tokens", size=100_000))
    return ChunkTable.from_chunks(chunks)


def labeled(folder: Path) -> tuple[dict[str, str], Qrels]:
    """The test queries that have qrels, and the qrels."""
    qrels = load_qrels(folder / "qrels" / "test.tsv")
    queries = {q: t for q, t in read_queries(folder / "queries.jsonl").items() if q in qrels}
    return queries, qrels


def vector_cache_dir(request: pytest.FixtureRequest) -> Path:
    """pytest's cache folder for vectors, or a per-run temporary one without the plugin."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("ctxselect-vectors"))
    folder = request.config._tmp_path_factory.getbasetemp() / "ctxselect-vectors"  # type: ignore[attr-defined]
    folder.mkdir(exist_ok=True)
    return Path(folder)


def cached_minilm(request: pytest.FixtureRequest) -> CachedEmbedder:
    """The real model behind the on-disk vector cache of this pytest run."""
    folder = vector_cache_dir(request)
    return CachedEmbedder(minilm(), FileVectorCache(folder))  # type: ignore[arg-type]


@functools.cache
def _dense(folder: Path, cache_dir: Path) -> DenseRetriever:
    embedder = CachedEmbedder(minilm(), FileVectorCache(cache_dir))  # type: ignore[arg-type]
    return DenseRetriever.build(beir_table(folder), embedder)


def real_dense(request: pytest.FixtureRequest, folder: Path) -> DenseRetriever:
    """Dense retrieval over a BEIR collection with the real model (embedded once per run)."""
    return _dense(folder, vector_cache_dir(request))

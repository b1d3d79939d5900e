"""Indexing with workers: the index equals the serial one, workers load the model once,
an interrupted run resumes without re-embedding or duplicating, bad settings are refused.

The embedders defined here are module-level classes: spawned workers import this module
to unpickle them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import ctxselect as cs
from ctxselect.api import parallel
from ctxselect.chunk import make_chunker
from ctxselect.embed import HashEmbedder, MemoryVectorCache, text_key
from ctxselect.errors import (
    ConfigError,
    IndexMismatchError,
    MissingExtraError,
    UnknownNameError,
)
from ctxselect.index.writer import indexed_text
from ctxselect.ingest import LocalExecutor, load_paths
from ctxselect.manifest import EmbedderSpec
from ctxselect.stores import open_store

SPEC = cs.ChunkSpec(chunker="paragraph", size=60, tokenizer="chars4")
WORDS = ["cache", "retry", "queue", "shard", "vector", "budget", "token", "index", "merge", "lock"]


class LoggingEmbedder(HashEmbedder):
    """The hash embedder, logging every text it embeds (one key per line) to a file, and
    failing on a text holding ``poison``; not registered, so it travels to the workers."""

    name = "logging"

    def __init__(self, log: Path, poison: str | None = None) -> None:
        super().__init__(dim=32)
        self.log = str(log)
        self.poison = poison

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if self.poison and any(self.poison in t for t in texts):
            raise RuntimeError(f"embedder stopped at {self.poison}")
        with open(self.log, "a", encoding="utf-8") as log:
            log.writelines(text_key(t) + "\n" for t in texts)
        return super().embed(texts, query=query)


def _write_corpus(root: Path, docs: int = 48) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(docs):
        paragraphs = [
            " ".join(WORDS[(i * 7 + j * 3 + w) % len(WORDS)] for w in range(3 + (i + j) % 9))
            + f" doc{i} part{j}"
            for j in range(4 + i % 6)
        ]
        (root / f"note{i:02d}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paragraphs))
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return _write_corpus(tmp_path / "corpus")


def _state(ix: Path) -> tuple[list[tuple], int, dict[str, np.ndarray], str]:
    """(chunks as tuples, chunks digest, vectors by key, model id) of an index."""
    store = open_store(ix)
    try:
        manifest = store.read_manifest()
        chunks = sorted(store.iter_chunks(), key=lambda c: c.chunk_id)
        rows = [(c.chunk_id, c.doc_id, c.start, c.end, c.text, c.header) for c in chunks]
        model = manifest["embedder"]["model_id"]
        keys = [text_key(indexed_text(c)) for c in chunks]
        vectors = store.vector_cache().get_many(model, keys)
        return rows, manifest["chunks_digest"], vectors, model
    finally:
        store.close()


def _searches(ix: Path, embedder: object = None) -> list[list[tuple[str, float]]]:
    out = []
    with cs.open_index(ix, embedder=embedder) as idx:  # type: ignore[arg-type]
        for mode in ("bm25", "dense", "hybrid"):
            for query in ("cache retry", "vector budget token", "doc7 part2"):
                out.append([(h.chunk_id, round(h.score, 6)) for h in idx.search(query, 10, mode)])
    return out


def assert_same_index(serial: Path, other: Path, embedder: object = None) -> None:
    """Same chunks (ids, offsets, texts), digest, vectors (1e-6) and search results."""
    rows, digest, vectors, model = _state(serial)
    rows2, digest2, vectors2, model2 = _state(other)
    assert rows2 == rows and len(rows) > 0
    assert digest2 == digest and model2 == model
    assert vectors2.keys() == vectors.keys() and len(vectors) > 0
    for key, vector in vectors.items():
        np.testing.assert_allclose(vectors2[key], vector, atol=1e-6)
    assert _searches(other, embedder) == _searches(serial, embedder)


def test_two_local_workers_build_the_serial_index(corpus: Path, tmp_path: Path) -> None:
    serial, pooled = tmp_path / "serial", tmp_path / "pooled"
    one = cs.index_paths([corpus], serial, chunk=SPEC, embedder="hash")
    two = cs.index_paths([corpus], pooled, chunk=SPEC, embedder="hash", workers=2)
    assert two.chunks == one.chunks > parallel.EMBED_TASK  # several embedding batches
    assert_same_index(serial, pooled)
    # an update (one file changed, one added, one removed) stays identical too
    (corpus / "note03.md").write_text("# Note 3\n\nrewritten: shard merge lock")
    (corpus / "extra.md").write_text("# Extra\n\nqueue budget vector")
    (corpus / "note05.md").unlink()
    one = cs.index_paths([], serial, embedder="hash")
    two = cs.index_paths([], pooled, embedder="hash", workers=2, executor="local")
    assert (two.added, two.updated, two.removed) == (one.added, one.updated, one.removed)
    assert (two.added, two.updated, two.removed) == (1, 1, 1)
    assert_same_index(serial, pooled)


def test_keyword_only_indexes_are_equal_too(corpus: Path, tmp_path: Path) -> None:
    cs.index_paths([corpus], tmp_path / "a", chunk=SPEC)
    cs.index_paths([corpus], tmp_path / "b", chunk=SPEC, workers=2)
    store_a, store_b = open_store(tmp_path / "a"), open_store(tmp_path / "b")
    try:
        assert list(store_a.iter_chunks()) == list(store_b.iter_chunks())
        assert store_a.read_manifest()["chunks_digest"] == store_b.read_manifest()["chunks_digest"]
    finally:
        store_a.close()
        store_b.close()


def test_each_worker_makes_the_model_once(tmp_path: Path) -> None:
    docs = list(load_paths([_write_corpus(tmp_path / "big", docs=160)]).documents)
    chunks = [c for d in docs for c in make_chunker(SPEC).chunk(d)]
    spec = EmbedderSpec("hash", HashEmbedder().model_id, 256, 50_000)
    cache = MemoryVectorCache()
    with LocalExecutor(2) as executor:
        source = parallel.embedder_source(spec, None, executor)
        batches = parallel.embed_missing(executor, chunks, cache, source, progress=False)
        again = parallel.embed_missing(executor, chunks, cache, source, progress=False)
    assert len(batches) >= 3 and again == []  # the second pass finds every vector cached
    pids = [b.worker for b in batches]
    assert os.getpid() not in pids and len(set(pids)) <= 2 < len(pids)  # a worker ran 2+
    assert {b.loads for b in batches} == {1}  # made on a worker's first batch, then kept
    assert source.threads == max(1, (os.cpu_count() or 1) // 2)
    texts = {indexed_text(c) for c in chunks}
    assert len(cache) == len(texts)
    np.testing.assert_allclose(
        np.stack([cache.get_many(spec.model_id, [text_key(t)])[text_key(t)] for t in texts]),
        HashEmbedder().embed(list(texts)),
        atol=1e-6,
    )


def test_an_interrupted_run_resumes_without_re_embedding(corpus: Path, tmp_path: Path) -> None:
    # the longest chunk holds the poison: texts go out shortest first, so the batches
    # before the last one are embedded and kept when the run stops
    (corpus / "zz.md").write_text("# Poisoned\n\n" + " ".join(["POISON"] + WORDS * 5))
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    ix = tmp_path / "ix"
    with pytest.raises(RuntimeError, match="embedder stopped at POISON"):
        cs.index_paths([corpus], ix, chunk=SPEC, embedder=LoggingEmbedder(first, "POISON"),
                       workers=2)  # fmt: skip
    model = LoggingEmbedder(first).model_id
    store = open_store(ix)
    try:
        assert store.counts()["chunks"] == 0  # nothing committed
        kept = set(store.vector_cache().get_many(model, first.read_text().split()))
    finally:
        store.close()
    assert len(kept) >= parallel.EMBED_TASK  # whole batches were kept before the stop
    report = cs.index_paths([corpus], ix, chunk=SPEC, embedder=LoggingEmbedder(second), workers=2)
    embedded_again = second.read_text().split()
    assert kept.isdisjoint(embedded_again)  # nothing stored is embedded twice
    assert len(embedded_again) == len(set(embedded_again))
    rows, _, vectors, _ = _state(ix)
    assert len(rows) == report.chunks == len({r[0] for r in rows})  # no chunk twice
    assert len(vectors) == len(kept) + len(embedded_again)
    serial = tmp_path / "serial"
    cs.index_paths([corpus], serial, chunk=SPEC, embedder=LoggingEmbedder(tmp_path / "s.log"))
    assert_same_index(serial, ix, LoggingEmbedder(tmp_path / "queries.log"))


class HeavyEmbedder(HashEmbedder):
    """An unregistered embedder holding 4 MB, like a model: too large to send."""

    name = "heavy"

    def __init__(self) -> None:
        super().__init__()
        self.weights = np.zeros(1_000_000, dtype=np.float32)


def test_which_embedders_travel_to_the_workers() -> None:
    class Local(HashEmbedder):  # defined in a function: it does not pickle
        name = "local-only"

    with LocalExecutor(2) as executor:
        for model in (Local(), HeavyEmbedder()):
            spec = EmbedderSpec(model.name, model.model_id, 256, 50_000)
            with pytest.raises(ConfigError, match=r"register it .* or index with workers=1"):
                parallel.embedder_source(spec, model, executor)
        small = LoggingEmbedder(Path("unused.log"))
        spec = EmbedderSpec(small.name, small.model_id, 32, 50_000)
        assert parallel.embedder_source(spec, small, executor).model is small  # sent along
        hashed = HashEmbedder()
        spec = EmbedderSpec("hash", hashed.model_id, 256, 50_000)
        assert parallel.embedder_source(spec, hashed, executor).model is None  # by name


def test_a_registered_embedder_made_with_other_options_is_refused_by_the_workers(
    corpus: Path, tmp_path: Path
) -> None:
    with pytest.raises(IndexMismatchError, match="workers=1"):
        cs.index_paths([corpus], tmp_path / "ix", embedder=HashEmbedder(dim=64), workers=2)
    report = cs.index_paths([corpus], tmp_path / "ix", embedder=HashEmbedder(dim=64))
    assert report.chunks > 0  # the serial path takes it


def test_bad_parallel_settings_are_refused_before_anything_is_written(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ix = tmp_path / "ix"
    with pytest.raises(ConfigError, match="workers must be a whole number >= 1"):
        cs.index_paths([corpus], ix, workers=0)
    with pytest.raises(UnknownNameError, match="choose one of local, ray"):
        cs.index_paths([corpus], ix, workers=2, executor="spark")
    with pytest.raises(ConfigError, match="for the ray executor"):
        cs.index_paths([corpus], ix, workers=2, ray_address="10.0.0.1:6379")
    with LocalExecutor(2) as executor, pytest.raises(ConfigError, match="has 2 workers"):
        cs.index_paths([corpus], ix, workers=3, executor=executor)
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[ray\]'"):
        cs.index_paths([corpus], ix, workers=2, executor="ray")
    assert not ix.exists()


def test_an_executor_object_is_used_and_left_open(corpus: Path, tmp_path: Path) -> None:
    with LocalExecutor(2) as executor:
        cs.index_paths([corpus], tmp_path / "a", chunk=SPEC, embedder="hash", executor=executor)
        assert executor._pool is not None  # still the caller's to close
        cs.index_paths([corpus], tmp_path / "b", chunk=SPEC, embedder="hash", executor=executor)
    assert_same_index(tmp_path / "a", tmp_path / "b")

"""embed_texts: blank texts never reach the model, caches by content hash, batches, bar."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.embed import (
    CachedEmbedder,
    FileVectorCache,
    HashEmbedder,
    MemoryVectorCache,
    embed_texts,
    text_key,
)
from ctxselect.errors import ConfigError


class Spy(HashEmbedder):
    """A hash embedder that records every batch it is given."""

    def __init__(self) -> None:
        super().__init__(32)
        self.batches: list[list[str]] = []

    def embed(self, texts, *, query=False):
        self.batches.append(list(texts))
        return super().embed(texts, query=query)


def test_blank_texts_are_never_embedded_and_get_zero_rows() -> None:
    spy = Spy()
    out = embed_texts(spy, ["alpha", "", "  \t\n", "beta"])
    seen = [t for batch in spy.batches for t in batch]
    assert sorted(seen) == ["alpha", "beta"]
    assert not out[1].any() and not out[2].any()
    assert np.array_equal(out[0], HashEmbedder(32).embed(["alpha"])[0])


def test_identical_texts_are_embedded_once() -> None:
    spy = Spy()
    out = embed_texts(spy, ["same", "other", "same"])
    assert sum(len(b) for b in spy.batches) == 2
    assert np.array_equal(out[0], out[2])


def test_batches_are_sorted_by_length_and_bounded() -> None:
    spy = Spy()
    texts = [f"word {'x ' * i}" for i in range(10, 0, -1)]
    out = embed_texts(spy, texts, batch_size=3)
    assert [len(b) for b in spy.batches] == [3, 3, 3, 1]
    flat = [t for b in spy.batches for t in b]
    assert flat == sorted(flat, key=len)
    assert np.array_equal(out, HashEmbedder(32).embed(texts))  # order restored


def test_cache_hits_skip_the_model_and_queries_are_not_cached() -> None:
    cache = MemoryVectorCache()
    first = embed_texts(Spy(), ["a chunk", "another chunk"], cache=cache)
    assert len(cache) == 2
    spy = Spy()
    again = embed_texts(spy, ["another chunk", "a chunk", "new one"], cache=cache)
    assert spy.batches == [["new one"]]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[1], first[0])
    embed_texts(Spy(), ["a query"], query=True, cache=cache)
    assert len(cache) == 3
    assert cache.get_many("other-model", [text_key("a chunk")]) == {}


def test_file_cache_survives_the_process(tmp_path) -> None:
    texts = ["Title\nbody one", "Title\nbody two"]
    first = embed_texts(Spy(), texts, cache=FileVectorCache(tmp_path))
    spy = Spy()
    second = embed_texts(spy, texts, cache=FileVectorCache(tmp_path))
    assert spy.batches == []
    assert np.array_equal(first, second)
    assert len(list(tmp_path.glob("*.npz"))) == 1


def test_file_cache_keeps_what_another_writer_added(tmp_path) -> None:
    one, two = FileVectorCache(tmp_path), FileVectorCache(tmp_path)
    one.get_many("m", ["k"])
    two.put_many("m", {"a": np.ones(4)})
    one.put_many("m", {"b": np.zeros(4)})
    assert set(FileVectorCache(tmp_path).get_many("m", ["a", "b"])) == {"a", "b"}


def test_progress_bar_on_stderr_only_when_asked(capsys) -> None:
    embed_texts(Spy(), ["one", "two"])
    assert capsys.readouterr().err == ""
    embed_texts(Spy(), ["one", "two"], progress=True)
    captured = capsys.readouterr()
    assert "embedding (hash)" in captured.err and captured.out == ""


def test_wrong_shape_and_bad_batch_size_are_errors() -> None:
    class Broken(HashEmbedder):
        def embed(self, texts, *, query=False):
            return np.zeros((1, self.dim), dtype=np.float32)

    with pytest.raises(ConfigError, match="one row of 256 per text"):
        embed_texts(Broken(), ["a", "b"])
    with pytest.raises(ConfigError, match="batch_size"):
        embed_texts(Spy(), ["a"], batch_size=0)


def test_cached_embedder_is_an_embedder() -> None:
    from ctxselect.embed import Embedder

    cached = CachedEmbedder(Spy(), MemoryVectorCache())
    assert isinstance(cached, Embedder)
    assert (cached.name, cached.dim, cached.model_id) == ("hash", 32, "hash-v1-32")
    assert cached.embed(["x", " "]).shape == (2, 32)


def test_cached_queries_are_embedded_once_and_kept_apart_from_passages() -> None:
    from ctxselect.embed import CachedEmbedder, HashEmbedder, MemoryVectorCache

    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[tuple[str, bool]] = []

        def embed(self, texts, *, query=False):  # type: ignore[no-untyped-def]
            self.calls += [(t, query) for t in texts]
            return super().embed(texts, query=query)

    inner, cache = Counting(), MemoryVectorCache()
    model = CachedEmbedder(inner, cache, cache_queries=True)
    first = model.embed(["reset the clock", "metastability"], query=True)
    again = model.embed(["metastability", "reset the clock"], query=True)
    assert sorted(inner.calls) == [("metastability", True), ("reset the clock", True)]
    assert np.array_equal(first, again[::-1])
    model.embed(["reset the clock"])  # a passage with a query's text: its own entry
    assert inner.calls[-1] == ("reset the clock", False)
    assert len(cache) == 3
    plain = CachedEmbedder(inner, cache)  # without cache_queries, queries are never kept
    plain.embed(["metastability"], query=True)
    assert inner.calls[-1] == ("metastability", True) and len(cache) == 3


def test_the_bar_counts_chunks_per_second_with_an_eta(capsys: pytest.CaptureFixture[str]) -> None:
    texts = [f"text number {i}" for i in range(40)]
    embed_texts(HashEmbedder(16), texts, batch_size=8, progress=True)
    bar = capsys.readouterr().err
    assert "embedding (hash)" in bar and "40/40" in bar
    assert "chunk/s" in bar  # the rate, in chunks
    assert "<00:00" in bar  # elapsed<remaining: the ETA

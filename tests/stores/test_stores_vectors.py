"""The index's vector cache: vectors by model and content hash, in the SQLite file."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ctxselect.embed import CachedEmbedder, HashEmbedder, VectorCache, text_key
from ctxselect.stores.embedded.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path):
    opened = SQLiteStore(tmp_path / "ix", create=True)
    yield opened
    opened.close()


def _vectors(n: int, dim: int = 8, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"k{i:04d}": rng.standard_normal(dim).astype(np.float32) for i in range(n)}


def test_vectors_round_trip_per_model_and_survive_reopening(store, tmp_path) -> None:
    cache = store.vector_cache()
    assert isinstance(cache, VectorCache)
    first, second = _vectors(3), _vectors(2, seed=1)
    cache.put_many("model-a", first)
    cache.put_many("model-b", second)
    got = cache.get_many("model-a", ["k0000", "k0002", "missing", "k0001"])
    assert set(got) == {"k0000", "k0001", "k0002"}
    for key, vector in got.items():
        assert vector.dtype == np.float32 and np.array_equal(vector, first[key])
    assert set(cache.get_many("model-b", list(first))) == {"k0000", "k0001"}
    assert (cache.count(), cache.count("model-a"), cache.count("model-c")) == (5, 3, 0)
    cache.put_many("model-a", {"k0000": np.ones(8)})  # replaced, not added
    assert cache.count("model-a") == 3
    assert np.array_equal(cache.get_many("model-a", ["k0000"])["k0000"], np.ones(8))
    store.close()
    again = SQLiteStore(tmp_path / "ix")
    try:
        assert again.vector_cache().count() == 5
    finally:
        again.close()


def test_many_keys_are_read_in_parts(store) -> None:
    cache = store.vector_cache()
    vectors = _vectors(1200)  # more than SQLite's bound parameters per statement
    cache.put_many("m", vectors)
    got = cache.get_many("m", [*vectors, "absent"])
    assert len(got) == 1200 and all(np.array_equal(got[k], v) for k, v in vectors.items())


def test_prune_keeps_only_the_given_keys_of_one_model(store) -> None:
    cache = store.vector_cache()
    cache.put_many("old", _vectors(4))
    cache.put_many("new", _vectors(6))
    assert cache.prune("new", ["k0001", "k0003", "k0099"]) == 8
    assert cache.count() == 2 and set(cache.get_many("new", list(_vectors(6)))) == {
        "k0001",
        "k0003",
    }
    assert cache.prune("new", ["k0001", "k0003"]) == 0
    assert cache.prune("new", []) == 2 and cache.count() == 0


def test_an_index_without_the_table_reads_as_empty_and_gains_it_on_write(store) -> None:
    store._conn.execute("DROP TABLE vectors")  # an index written before the cache existed
    cache = store.vector_cache()
    assert cache.get_many("m", ["k0000"]) == {} and cache.count() == 0
    assert cache.prune("m", []) == 0
    cache.put_many("m", _vectors(2))
    assert cache.count("m") == 2


def test_a_failed_write_rolls_back_and_leaves_the_connection_usable(store) -> None:
    cache = store.vector_cache()
    cache.put_many("m", _vectors(2))
    bad = {"k0005": np.ones(8), None: np.ones(8)}  # a NULL key breaks the NOT NULL rule
    with pytest.raises(sqlite3.IntegrityError):
        cache.put_many("m", bad)  # type: ignore[dict-item]
    assert not store._conn.in_transaction
    assert cache.count("m") == 2 and cache.get_many("m", ["k0005"]) == {}
    cache.put_many("m", {"k0005": np.ones(8)})
    assert cache.count("m") == 3


def test_a_cached_embedder_reuses_the_index_cache(store) -> None:
    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(16)
            self.seen: list[str] = []

        def embed(self, texts, *, query=False):
            self.seen.extend(texts)
            return super().embed(texts, query=query)

    inner = Counting()
    cached = CachedEmbedder(inner, store.vector_cache())
    first = cached.embed(["apple", "banana", "  ", "apple"])
    assert inner.seen == ["apple", "banana"] and not first[2].any()
    assert store.vector_cache().count(inner.model_id) == 2
    assert set(store.vector_cache().get_many(inner.model_id, [text_key("apple")])) == {
        text_key("apple")
    }
    again = cached.embed(["banana", "apple", "cherry"])
    assert inner.seen == ["apple", "banana", "cherry"]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[1], first[0])
    assert np.array_equal(cached.embed(["apple"], query=True)[0], first[0])
    assert inner.seen[-1] == "apple"  # queries are embedded, never looked up or stored
    assert store.vector_cache().count(inner.model_id) == 3

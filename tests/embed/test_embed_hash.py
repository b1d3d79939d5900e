"""The hash embedder: deterministic unit vectors, shared words mean positive cosine."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.embed import EMBEDDERS, HashEmbedder, make_embedder, text_key
from ctxselect.errors import ConfigError, InputError, UnknownNameError


def test_same_text_same_unit_vector() -> None:
    a = HashEmbedder(64).embed(["Reset the synchronizer", "Reset the synchronizer"])
    b = HashEmbedder(64).embed(["Reset the synchronizer"])
    assert a.shape == (2, 64) and a.dtype == np.float32
    assert np.array_equal(a[0], a[1]) and np.array_equal(a[0], b[0])
    assert np.linalg.norm(a[0]) == pytest.approx(1.0, abs=1e-6)


def test_shared_words_are_closer_than_unrelated_text() -> None:
    v = HashEmbedder(256).embed(
        ["clock gating saves power", "gating the clock saves dynamic power", "hold reset low"]
    )
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


def test_blank_text_is_refused_and_punctuation_still_unit() -> None:
    embedder = HashEmbedder()
    with pytest.raises(InputError, match="blank"):
        embedder.embed(["fine", "   \n"])
    assert np.linalg.norm(embedder.embed(["!!!"])[0]) == pytest.approx(1.0)


def test_registry_and_validation() -> None:
    assert "hash" in EMBEDDERS.names() and "minilm" in EMBEDDERS.names()
    assert make_embedder("hash", dim=32).dim == 32
    assert make_embedder("hash").model_id == "hash-v1-256"
    with pytest.raises(UnknownNameError, match="hash, minilm"):
        make_embedder("word2vec")
    with pytest.raises(ConfigError):
        HashEmbedder(4)


def test_text_key_is_sha256_of_the_text() -> None:
    import hashlib

    assert text_key("Title\nbody") == hashlib.sha256(b"Title\nbody").hexdigest()

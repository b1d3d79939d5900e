"""The wordllama embedder: unit vectors, deterministic, offline, and usable in an index."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

import ctxselect as cs
from ctxselect.config import ChunkSpec
from ctxselect.embed import EMBEDDERS, HashEmbedder, WordLlamaEmbedder, make_embedder
from ctxselect.embed.static import WINDOW, package_dir
from ctxselect.errors import IndexMismatchError, InputError, MissingExtraError

PARAPHRASES = [
    "How do I reset the board?",
    "Steps to restart the circuit board",
    "Recipes for chocolate cake",
]
DOCS = {
    "reset.md": "# Resetting\n\nTo restart the circuit board, hold the reset button for five "
    "seconds until the power light blinks.",
    "cake.md": "# Baking\n\nMelt the chocolate, whisk eggs and sugar, fold in flour and bake "
    "the cake for forty minutes.",
    "garden.md": "# Garden\n\nWater tomato plants in the morning and prune the lower leaves "
    "so the stems stay dry.",
    "travel.md": "# Trains\n\nBuy the rail pass before boarding; the night train to the coast "
    "leaves at ten.",
}


@pytest.fixture(scope="module")
def model() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for name, body in DOCS.items():
        (root / name).write_text(body, encoding="utf-8")
    ix = tmp_path_factory.mktemp("ix")
    cs.index_paths([root], ix, chunk=ChunkSpec(chunker="markdown", size=200), embedder="wordllama")
    return ix


def test_unit_float32_rows_with_paraphrases_closest(model) -> None:
    vectors = model.embed(PARAPHRASES)
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32 and model.dim == 256
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
    assert "wordllama" in EMBEDDERS.names()
    assert isinstance(make_embedder("wordllama"), WordLlamaEmbedder)


def test_same_text_same_vector_whatever_its_batch(model) -> None:
    alone = model.embed([PARAPHRASES[1]])
    among = model.embed([PARAPHRASES[0], "x " * 500 + "long", PARAPHRASES[1]])
    again = WordLlamaEmbedder().embed([PARAPHRASES[1]])
    assert np.array_equal(alone[0], among[2]) and np.array_equal(alone, again)
    assert np.array_equal(model.embed(PARAPHRASES, query=True), model.embed(PARAPHRASES))


def test_vectors_equal_the_wordllama_library(model) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:  # importing wordllama runs logging.basicConfig(INFO): undo it after
        from wordllama import WordLlama

        reference = WordLlama.load(cache_dir=package_dir(), dim=256, disable_download=True)
        texts = [*PARAPHRASES, "BRCA1 mutations raise the risk of breast cancer.", "ok"]
        expected = reference.embed(texts, norm=True)
    finally:
        root.handlers[:], root.level = handlers, level
    got = model.embed(texts)
    assert np.allclose(got, expected, atol=1e-5)
    assert np.min(np.sum(got * expected, axis=1)) > 0.99999


def test_long_text_is_embedded_whole(model) -> None:
    head = "alpha " * (WINDOW + 500)
    assert len(model.tokenizer.encode(head, add_special_tokens=False).ids) > WINDOW
    both, alone, tail = model.embed([head + "beta " * WINDOW, head, "beta"])
    assert float(both @ alone) < 0.99  # the words after the first window count
    assert float(both @ tail) > float(alone @ tail) + 0.1


def test_model_id_names_weights_dimensions_and_package_version(model) -> None:
    assert model.model_id == (
        f"dleemiller/word-llama-l2-supercat 256d (wordllama {version('wordllama')})"
    )
    assert model.model_id != HashEmbedder().model_id


def test_blank_text_is_refused(model) -> None:
    with pytest.raises(InputError, match="blank"):
        model.embed(["fine", " \n"])


@pytest.mark.parametrize("module", ["wordllama", "tokenizers"])
def test_missing_extra_gives_the_install_line(monkeypatch, module) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import and find_spec now fail
    with pytest.raises(MissingExtraError) as err:
        make_embedder("wordllama")
    assert "pip install 'ctxselect[fast]'" in str(err.value)


def _network_blocked() -> list[str]:
    """A command prefix that takes the network away (a new, empty network namespace), or
    none where that is not allowed: the script blocks Python's sockets itself too."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def test_loads_and_embeds_with_the_network_blocked(tmp_path) -> None:
    script = textwrap.dedent(
        """
        import socket, sys

        def refuse(*args, **kwargs):
            raise OSError("network blocked by the test")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from ctxselect.embed import make_embedder

        vectors = make_embedder("wordllama").embed(["offline works"])
        print(vectors.shape, "requests" in sys.modules, "wordllama" in sys.modules)
        """
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [*_network_blocked(), sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(1,", "256)", "False", "False"]  # no download code loaded
    assert not any(home.rglob("*"))  # nothing cached under the home folder


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_an_index_built_with_it_searches_dense_and_hybrid(folder, mode) -> None:
    with cs.open_index(folder) as idx:
        assert idx.info().settings["embedder"]["name"] == "wordllama"
        assert idx.info().settings["embedder"]["dim"] == 256
        hits = idx.search("how to reboot the electronics", 3, mode)
        assert hits[0].doc_id == "reset.md"
        assert idx.search("baking a dessert", 3, mode)[0].doc_id == "cake.md"


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_another_model_is_refused_naming_both(folder, mode) -> None:
    with cs.open_index(folder, embedder="hash") as idx, pytest.raises(IndexMismatchError) as err:
        idx.search("reset", 3, mode)
    assert "word-llama-l2-supercat" in str(err.value) and "hash-v1-256" in str(err.value)


@pytest.mark.slow
def test_minilm_queries_are_refused_on_a_wordllama_index(folder) -> None:
    with cs.open_index(folder, embedder="minilm") as idx, pytest.raises(IndexMismatchError) as err:
        idx.search("reset", 3, "hybrid")
    assert "all-MiniLM-L6-v2" in str(err.value) and "word-llama" in str(err.value)
    assert "--embedder minilm" in str(err.value)

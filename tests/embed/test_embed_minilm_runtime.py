"""MiniLM's runtimes: queries through numpy (no torch), the same vectors as torch's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _support.datasets import dataset_dir
from ctxselect.embed import make_embedder
from ctxselect.embed.minilm import MAX_TOKENS, MiniLMEmbedder, model_dir, tokenizer_file
from ctxselect.errors import ConfigError


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_making_minilm_and_embedding_a_query_never_import_torch() -> None:
    code = (
        "import sys\n"
        "from ctxselect.embed import make_embedder\n"
        "e = make_embedder('minilm')\n"
        "v = e.embed(['how do I reset the board?'], query=True)\n"
        "print(v.shape, round(float((v * v).sum()), 4), 'torch' in sys.modules,"
        " 'sentence_transformers' in sys.modules)"
    )
    assert _python(code) == "(1, 384) 1.0 False False"


def test_the_tokenizer_file_is_the_models_own() -> None:
    path = Path(tokenizer_file())
    assert path.parent == Path(model_dir()) and path.is_file()


def _long_texts() -> list[str]:
    """SciFact abstracts that fill the model's 256 word pieces, and short ones."""
    lines = (dataset_dir("scifact") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines[:: len(lines) // 40][:40]]
    return [f"{d['title']}\n{d['text']}" for d in docs]


def _queries() -> list[str]:
    lines = (dataset_dir("scifact") / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:: len(lines) // 60][:60]]


@pytest.mark.slow
@pytest.mark.data
def test_numpy_queries_equal_torch_vectors_on_scifact_and_at_the_limit() -> None:
    embedder = make_embedder("minilm", embed_long="truncate", precision="fp32")
    assert isinstance(embedder, MiniLMEmbedder)
    long = _long_texts()
    pieces = embedder.query_encoder.ids(long)
    assert sum(len(p) == MAX_TOKENS for p in pieces) >= 20  # cut at the limit, as torch cuts
    texts = [*_queries(), *long, "  padded query  ", "Ünïcode — naïve café ✓"]
    numpy_vectors = embedder.embed(texts, query=True)
    torch_vectors = embedder.embed(texts)  # passages: sentence-transformers on torch
    cosines = (numpy_vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= 0.999
    assert np.allclose(np.linalg.norm(numpy_vectors, axis=1), 1.0, atol=1e-5)
    bf16 = MiniLMEmbedder(precision="bf16").embed(texts)  # the fast passage runtime
    assert (bf16 * torch_vectors).sum(axis=1).min() >= 0.999
    assert np.allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    assert MiniLMEmbedder(precision="bf16").model_id == embedder.model_id


def test_an_unknown_precision_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="auto, bf16, fp32"):
        MiniLMEmbedder(precision="int4")


@pytest.mark.slow
def test_hybrid_search_and_mcp_tools_on_a_minilm_index_never_load_torch(tmp_path) -> None:
    from ctxselect import index_paths

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "boards.md").write_text("# Boards\n\nHold reset for five seconds to restart.\n")
    (docs / "cakes.md").write_text("# Cakes\n\nChocolate cake needs cocoa and eggs.\n")
    folder = tmp_path / "index"
    index_paths([docs], folder, embedder="minilm")
    code = (
        "import sys\n"
        "from ctxselect import open_index\n"
        f"idx = open_index({str(folder)!r})\n"
        "dense = idx.search('how do I restart the board?', k=1, mode='dense')\n"
        "hybrid = idx.search('how do I restart the board?', k=1, mode='hybrid')\n"
        "print(dense[0].doc_id.endswith('boards.md'), hybrid[0].doc_id.endswith('boards.md'),"
        " 'torch' in sys.modules)"
    )
    assert _python(code) == "True True False"
    tools = (  # `ctxselect mcp --json`: the tools are described without loading a model
        "import contextlib, io, json, sys\n"
        f"sys.argv = ['ctxselect', 'mcp', '--json', '--index', {str(folder)!r}]\n"
        "from ctxselect.interfaces.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main()\n"
        "print(len(json.loads(out.getvalue())) > 0, 'torch' in sys.modules)"
    )
    assert _python(tools) == "True False"

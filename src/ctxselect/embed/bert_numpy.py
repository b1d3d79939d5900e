"""A BERT encoder's forward pass in numpy: sentence vectors without torch.

Loading torch and sentence-transformers takes 7-10 s on 2 cores; a query is a few dozen
word pieces, and six small layers of matrix products take milliseconds. This module
reads the same safetensors weights and the same ``tokenizer.json`` (through the
``tokenizers`` package, the Rust tokenizer sentence-transformers itself runs) and
computes what ``BertModel`` + mean pooling + normalisation compute (Devlin et al. 2019;
Reimers & Gurevych 2019), so its vectors match the torch encoder's to float32 rounding
(tests/embed/test_embed_minilm_runtime.py checks cosine >= 0.999 on real texts).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect._require import require

_FEATURE = "the minilm embedder (dense and hybrid retrieval)"

# erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7, float32's own rounding): numpy
# has no erf, and scipy costs a quarter of a second to import.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(x: np.ndarray) -> np.ndarray:
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + _ERF_P * a)
    a1, a2, a3, a4, a5 = _ERF_A
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x) (not the tanh approximation)."""
    return x * np.float32(0.5) * (np.float32(1.0) + _erf(x * np.float32(0.7071067811865476)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv: np.ndarray  # (hidden, 3 * hidden): query, key and value in one product
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


def _read_layers(weights: dict[str, np.ndarray], count: int) -> list[_Layer]:
    """The encoder layers, each weight transposed once to (in, out) for ``x @ w``."""
    layers = []
    for i in range(count):
        p = f"encoder.layer.{i}."

        def w(name: str, prefix: str = p) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        qkv = [w(f"attention.self.{n}.weight").T for n in ("query", "key", "value")]
        layers.append(
            _Layer(
                qkv=np.ascontiguousarray(np.concatenate(qkv, axis=1)),
                qkv_bias=np.concatenate(
                    [w(f"attention.self.{n}.bias") for n in ("query", "key", "value")]
                ),
                out=np.ascontiguousarray(w("attention.output.dense.weight").T),
                out_bias=w("attention.output.dense.bias"),
                norm1=(
                    w("attention.output.LayerNorm.weight"),
                    w("attention.output.LayerNorm.bias"),
                ),
                up=np.ascontiguousarray(w("intermediate.dense.weight").T),
                up_bias=w("intermediate.dense.bias"),
                down=np.ascontiguousarray(w("output.dense.weight").T),
                down_bias=w("output.dense.bias"),
                norm2=(w("output.LayerNorm.weight"), w("output.LayerNorm.bias")),
            )
        )
    return layers


class NumpyBert:
    """A BERT sentence encoder (mean pooling, unit length) run in numpy.

    Args:
        folder: A sentence-transformers model folder: ``config.json``,
            ``model.safetensors`` and ``tokenizer.json``.
        max_tokens: Word pieces read per text, [CLS] and [SEP] included (the model's
            ``max_seq_length``); longer texts are cut there, as sentence-transformers does.

    Raises:
        MissingExtraError: ``tokenizers`` or ``safetensors`` is not installed.
    """

    def __init__(self, folder: str | Path, max_tokens: int) -> None:
        folder = Path(folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        st_numpy = require("safetensors.numpy", extra="dense", feature=_FEATURE)
        tokenizers = require("tokenizers", extra="dense", feature=_FEATURE)
        weights: dict[str, Any] = st_numpy.load_file(str(folder / "model.safetensors"))
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.max_tokens = max_tokens
        self.words = np.asarray(weights["embeddings.word_embeddings.weight"], dtype=np.float32)
        self.positions = np.asarray(weights["embeddings.position_embeddings.weight"])
        self.type0 = np.asarray(weights["embeddings.token_type_embeddings.weight"][0])
        self.norm0 = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = _read_layers(weights, int(config["num_hidden_layers"]))
        self.tokenizer: Any = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file pads every text to 128: batches pad here
        self.tokenizer.enable_truncation(max_length=max_tokens)

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Return each text's word-piece ids, [CLS] and [SEP] included, cut at the limit."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Return the pooled, unit-length vectors of texts given as word-piece ids."""
        if not ids:
            return np.zeros((0, self.words.shape[1]), dtype=np.float32)
        width = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        hidden = self._forward(tokens, mask)
        summed = np.einsum("bld,bl->bd", hidden, mask)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)

    def _forward(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, width = tokens.shape
        x = self.words[tokens] + self.positions[:width] + self.type0
        x = _layer_norm(x, *self.norm0, self.eps)
        # Padded keys get the most negative float, as transformers' extended mask does.
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            x = self._layer(x, layer, bias, batch, width)
        return x

    def _layer(
        self, x: np.ndarray, layer: _Layer, bias: np.ndarray, batch: int, width: int
    ) -> np.ndarray:
        hidden = x.shape[-1]
        size = hidden // self.heads
        qkv = x @ layer.qkv + layer.qkv_bias
        qkv = qkv.reshape(batch, width, 3, self.heads, size).transpose(2, 0, 3, 1, 4)
        query, key, value = qkv[0], qkv[1], qkv[2]
        scores = query @ key.transpose(0, 1, 3, 2) * np.float32(1.0 / np.sqrt(size)) + bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, width, hidden)
        x = _layer_norm(context @ layer.out + layer.out_bias + x, *layer.norm1, self.eps)
        inner = _gelu(x @ layer.up + layer.up_bias)
        return _layer_norm(inner @ layer.down + layer.down_bias + x, *layer.norm2, self.eps)


__all__ = ["NumpyBert"]

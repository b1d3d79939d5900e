"""A deterministic embedder from hashed words: instant, dependency-free, for tests.

Feature hashing (Weinberger et al. 2009): each lowercased word and word bigram adds a
signed, log-scaled count to one of ``dim`` buckets chosen by a stable hash, and the
vector is scaled to unit length. Texts sharing words get a positive cosine; nothing
is learned, so it measures the plumbing, never retrieval quality.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from ctxselect.embed.base import EMBEDDERS, is_blank
from ctxselect.errors import ConfigError, InputError

_WORD = re.compile(r"\w+")


@EMBEDDERS.register("hash")
class HashEmbedder:
    """Hash words and word bigrams into ``dim`` signed buckets; same text, same vector."""

    name = "hash"

    def __init__(self, dim: int = 256) -> None:
        """Set the vector length.

        Raises:
            ConfigError: ``dim`` is not a whole number >= 8.
        """
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ConfigError(f"hash embedder dim must be a whole number >= 8, got {dim!r}")
        self.dim = dim
        self.model_id = f"hash-v1-{dim}"
        self._buckets: dict[str, tuple[int, float]] = {}

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Return one unit-length float32 row per text (``query`` changes nothing).

        Raises:
            InputError: A text is blank: blank texts must not reach an embedder.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            if is_blank(text):
                raise InputError(
                    f"text {i} of {len(texts)} is blank: blank texts are never embedded "
                    f"(embed_texts leaves them out)"
                )
            words = _WORD.findall(text.lower())
            features = Counter(words + [f"{a} {b}" for a, b in pairwise(words)])
            row = out[i]
            for feature, count in features.items():
                bucket, sign = self._bucket(feature)
                row[bucket] += sign * (1.0 + math.log(count))
            norm = float(np.linalg.norm(row))
            if norm > 0:
                row /= norm
            else:  # only punctuation: a fixed direction keeps the row unit-length
                row[0] = 1.0
        return out

    def _bucket(self, feature: str) -> tuple[int, float]:
        found = self._buckets.get(feature)
        if found is None:
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
            found = (digest % self.dim, 1.0 if digest >> 63 else -1.0)
            if len(self._buckets) < 1_000_000:
                self._buckets[feature] = found
        return found

"""A tiny, well-formed base segment for store tests that commit rows by hand."""

from __future__ import annotations

import numpy as np


def tiny_base(n: int) -> dict[str, dict[str, np.ndarray]]:
    """One mode (bm25) over ``n`` rows, one term in every row."""
    return {
        "bm25": {
            "vocab": np.frombuffer(b"word", dtype=np.uint8).copy(),
            "indptr": np.array([0, n], dtype=np.int64),
            "rows": np.arange(n, dtype=np.int32),
            "tfs": np.ones(n, dtype=np.int32),
            "lengths": np.ones(n, dtype=np.int32),
            "weights": np.full(n, 0.5, dtype=np.float32),
        }
    }

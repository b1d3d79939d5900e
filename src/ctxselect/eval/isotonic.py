"""A non-decreasing least-squares fit of a sequence (isotonic regression).

Pool-adjacent-violators (Ayer, Brunk, Ewing, Reid and Silverman, Ann. Math. Stat. 1955).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def isotonic_fit(values: Sequence[float], weights: Sequence[float] | None = None) -> list[float]:
    """Return the non-decreasing sequence closest to ``values`` in weighted least squares.

    Neighbouring values that decrease are pooled into one block holding their weighted
    mean, until no block's mean exceeds the next one's.

    Args:
        values: The sequence, in order (e.g. recall per increasing budget).
        weights: Positive weight per value (default 1 each).

    Returns:
        The fitted values, one per input value.
    """
    y = np.asarray(values, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    means: list[float] = []
    sizes: list[float] = []
    counts: list[int] = []
    for value, weight in zip(y.tolist(), w.tolist(), strict=True):
        means.append(value)
        sizes.append(weight)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            total = sizes[-2] + sizes[-1]
            means[-2] = (means[-2] * sizes[-2] + means[-1] * sizes[-1]) / total
            sizes[-2] = total
            counts[-2] += counts[-1]
            del means[-1], sizes[-1], counts[-1]
    return np.repeat(np.asarray(means), counts).tolist()

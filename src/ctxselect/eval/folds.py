"""Cross-validation folds by query: the one assignment tuning, calibration and eval share."""

from __future__ import annotations

import random
from collections.abc import Sequence

DEFAULT_FOLDS = 5
"""Folds of every cross-validation by query unless told otherwise."""


def fold_of(qids: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Assign each query to one of ``folds`` folds, sizes differing by at most one.

    The assignment depends only on the set of ids and the seed (ids are sorted first).
    """
    order = sorted(qids)
    random.Random(seed).shuffle(order)
    return {qid: i % folds for i, qid in enumerate(order)}


__all__ = ["DEFAULT_FOLDS", "fold_of"]

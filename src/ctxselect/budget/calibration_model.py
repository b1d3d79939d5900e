"""The P(relevant) model: features of a chunk's place in its ranking, and a logistic map.

Features of a ranked chunk (:data:`FEATURES`, in this order):

- ``rel``: score / the query's top score (1 for the top chunk),
- ``log_rank``: ln(rank),
- ``gap``: (score of the chunk ranked just above − score) / top score (0 at rank 1),
- ``score``: the raw score (bm25 and tfidf scores carry how well the query matched),
- ``z``: how far the score stands above the query's score distribution, (score − mean) /
  standard deviation of the top :data:`STATS_DEPTH` scores (relevant documents are the
  high outliers of a ranking's scores: Arampatzis et al. 2009, score-distribution models),
- ``log_tenth``: ln(score / the 10th score), how far above the head of the list it is,
- ``z_top``: the ``z`` of the query's top score, the same for every chunk of the query (a
  query whose best match stands far out is one the index answers well: a query
  performance predictor in the spirit of Shtok et al. 2012).

A logistic regression with a small L2 penalty (:func:`fit_logistic`) on the standardised
features gives P (:class:`Model`); :mod:`ctxselect.budget.calibration` fits and stores it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FEATURES = ("rel", "log_rank", "gap", "score", "z", "log_tenth", "z_top")
"""Feature names, in the order of the coefficients after the intercept."""
L2 = 1.0
"""Ridge penalty on the standardised coefficients (not the intercept)."""
STATS_DEPTH = 100
"""Top scores of a ranking the distribution features (``z``, ``z_top``) are measured on."""
TENTH = 10
"""Rank of the score ``log_tenth`` compares with."""


def rank_features(scores: Sequence[float]) -> np.ndarray:
    """Return the ``(n, 7)`` features (:data:`FEATURES`) of a ranked list's scores, best first."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return np.zeros((0, len(FEATURES)))
    top = s[0] if s[0] > 0 else 1.0
    gap = np.zeros_like(s)
    gap[1:] = (s[:-1] - s[1:]) / top
    ranks = np.arange(1, s.size + 1, dtype=np.float64)
    head = s[:STATS_DEPTH]
    spread = float(head.std())
    z = (s - float(head.mean())) / spread if spread > 0 else np.zeros_like(s)
    floor = abs(top) * 1e-6  # scores at or below 0 (cosine, fused) read as the floor
    tenth = max(float(s[min(TENTH, s.size) - 1]), floor)
    log_tenth = np.clip(np.log(np.maximum(s, floor) / tenth), -10.0, 10.0)
    return np.column_stack([s / top, np.log(ranks), gap, s, z, log_tenth, np.full_like(s, z[0])])


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 50) -> np.ndarray:
    """Return ``[intercept, *coef]`` of an L2-penalised logistic regression (IRLS).

    ``x`` should be standardised; the intercept is not penalised.
    """
    design = np.column_stack([np.ones(len(x)), x])
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = _sigmoid(design @ beta)
        grad = design.T @ (p - y) + penalty * beta
        w = p * (1 - p) + 1e-9
        hess = (design * w[:, None]).T @ design + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return beta


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -35.0, 35.0)))


@dataclass(frozen=True, slots=True)
class Model:
    """A fitted map from rank features to P(relevant).

    Attributes:
        coef: Intercept then one coefficient per feature (standardised features).
        center: Training mean of each feature.
        scale: Training standard deviation of each feature (1 where it was 0).
    """

    coef: tuple[float, ...]
    center: tuple[float, ...]
    scale: tuple[float, ...]

    def predict(self, scores: Sequence[float]) -> list[float]:
        """Return P(relevant) of each chunk of one query's ranking (scores best first)."""
        x = (rank_features(scores) - np.array(self.center)) / np.array(self.scale)
        beta = np.array(self.coef)
        return [float(p) for p in _sigmoid(beta[0] + x @ beta[1:])]

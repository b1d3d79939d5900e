"""Calibrated P(relevant) of a ranked chunk, from per-query rank features.

Platt-style scaling (Platt 1999) generalised to a few features: a logistic regression,
fitted by Newton's method (IRLS) with a small L2 penalty, maps features of a chunk's place
in its query's ranking to the probability that its document is relevant (the features,
and what each measures: :mod:`ctxselect.budget.calibration_model`).

Every feature depends on the chunk, the ones ranked above it and the top
:data:`STATS_DEPTH` scores, so a chunk's P does not change with how many hits are asked
for as long as at least that many are ranked (``Index.search`` ranks that many when the
mode is calibrated). Features are standardised with the training means and deviations,
stored with the coefficients. One model per retrieval mode; tuning
(:func:`ctxselect.api.calibrate.calibrate_index`) fits it and stores it in the index manifest.

Stopping threshold (cost model of :mod:`ctxselect.eval.cost`): a chunk of n tokens stays
in the context for T turns and is billed n × (1 + (T − 1) × c). Its value has diminishing
returns: the first relevant chunk of a query is worth V tokens, the k-th V / k (the
harmonic discount of DCG; the first relevant chunk answers most of a question, each
further one adds less). With E relevant chunks expected above it (the sum of their P), a
chunk's expected value is P × V / (1 + E), and keeping it is worth it when that is at
least its cost: P ≥ t × (n / n̄) × (1 + E), with ``t = min(1, n̄ × (1 + (T − 1) × c) / V)``
the P a chunk of the index's mean size n̄ needs (:func:`cost_threshold`, stored) and n the
chunk's own size (``budget.stop`` applies it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, replace
from typing import Any

import numpy as np

from ctxselect.budget.calibration_model import FEATURES, L2, Model, fit_logistic, rank_features
from ctxselect.budget.calibration_model import STATS_DEPTH as STATS_DEPTH
from ctxselect.errors import InputError
from ctxselect.types import Hit

BINS = 10
"""Equal-width bins of the expected calibration error."""
DEFAULT_VALUE = 2000.0
"""V: what a query's first relevant chunk is worth, in billed tokens (see the module
docstring)."""


def fit(rankings: Sequence[tuple[Sequence[float], Sequence[int]]], l2: float = L2) -> Model:
    """Fit a :class:`Model` on ``(scores best first, 0/1 labels)`` per query.

    Raises:
        InputError: No query has a ranked chunk to learn from.
    """
    x = np.vstack([rank_features(s) for s, _ in rankings]) if rankings else np.zeros((0, 0))
    if x.shape[0] == 0:
        raise InputError(
            "no labeled query has a ranked chunk to calibrate on: check that the queries "
            "match the index's documents (the qrels use its doc ids)"
        )
    y = np.concatenate([np.asarray(lab, dtype=np.float64) for _, lab in rankings])
    center = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    beta = fit_logistic((x - center) / scale, y, l2)
    return Model(tuple(map(float, beta)), tuple(map(float, center)), tuple(map(float, scale)))


def out_of_sample_models(
    rankings: Mapping[str, tuple[Sequence[float], Sequence[int]]],
    fold: Mapping[str, int],
    l2: float = L2,
) -> dict[str, Model]:
    """Return qid -> a model fitted on the other folds' queries only, for every qid in ``fold``.

    Used where the labels fitted on are also the labels evaluated (``eval``/``sweep`` with
    stopping): a query's P(relevant) never comes from a model that saw its own labels.
    A fold whose other folds hold no ranked chunk gets no model (its queries are left out).
    """
    out: dict[str, Model] = {}
    for f in sorted(set(fold.values())):
        train = [r for q, r in rankings.items() if fold.get(q) != f]
        if not any(len(scores) for scores, _ in train):
            continue
        model = fit(train, l2)
        out.update({q: model for q, g in fold.items() if g == f})
    return out


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    """ECE: the share-weighted mean |mean P − share relevant| over equal-width P bins."""
    if len(p) == 0:
        return 0.0
    which = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            total += inside.sum() * abs(float(p[inside].mean()) - float(y[inside].mean()))
    return total / len(p)


@dataclass(frozen=True, slots=True)
class Reliability:
    """Out-of-sample reliability of P: ECE, log loss and Brier score over held-out chunks."""

    ece: float
    log_loss: float
    brier: float
    n_chunks: int
    base_rate: float


def cross_validate(
    rankings: Mapping[str, tuple[Sequence[float], Sequence[int]]],
    fold: Mapping[str, int],
    l2: float = L2,
) -> Reliability:
    """Score every query's chunks with a model fitted on the other folds; measure P."""
    ps, ys = [], []
    for f in sorted(set(fold.values())):
        train = [r for q, r in rankings.items() if fold[q] != f]
        test = [r for q, r in rankings.items() if fold[q] == f]
        if not any(len(scores) for scores, _ in train) or not test:
            continue  # nothing to fit on without this fold's queries
        model = fit(train, l2)
        for scores, labels in test:
            ps.append(np.array(model.predict(scores)))
            ys.append(np.asarray(labels, dtype=np.float64))
    p = np.concatenate(ps) if ps else np.zeros(0)
    y = np.concatenate(ys) if ys else np.zeros(0)
    clipped = np.clip(p, 1e-12, 1 - 1e-12)
    log_loss = (
        float(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))) if len(p) else 0.0
    )
    return Reliability(
        ece=expected_calibration_error(p, y),
        log_loss=log_loss,
        brier=float(np.mean((p - y) ** 2)) if len(p) else 0.0,
        n_chunks=len(p),
        base_rate=float(y.mean()) if len(y) else 0.0,
    )


def cost_threshold(
    chunk_tokens: float, turns: int, cache_factor: float, value: float = DEFAULT_VALUE
) -> float:
    """Return ``t = min(1, n × (1 + (T − 1) × c) / V)``: the P a query's first chunk needs
    to be worth sending (a later one needs ``t × (1 + E)``, see the module docstring)."""
    return min(1.0, chunk_tokens * (1 + (turns - 1) * cache_factor) / value)


@dataclass(frozen=True, slots=True)
class Calibration:
    """One mode's calibration as the manifest stores it (key ``calibration``, by mode).

    Attributes:
        mode: The retrieval mode whose scores it reads.
        model: The fitted model (on every labeled query).
        threshold: t of ``stop="auto"``: the P a chunk of the mean size needs when no
            relevant chunk is expected above it (see the module docstring); the cost
            model's t unless the labels say otherwise by more than one standard error
            (``ctxselect.api.calibrate``).
        ece: Out-of-sample expected calibration error (k-fold by query, 10 bins).
        log_loss: Out-of-sample log loss.
        brier: Out-of-sample Brier score.
        base_rate: Share of relevant chunks among those ranked.
        n_queries: Labeled queries fitted on.
        n_chunks: Ranked chunks fitted on.
        depth: Chunks ranked per query.
        folds: Cross-validation folds.
        turns: T of the cost model.
        cache_factor: c of the cost model.
        value: V of the cost model, in tokens.
        chunk_tokens: n of the cost model: the index's mean chunk size.
        cost_threshold: The cost model's t (:func:`cost_threshold`).
        label_threshold: The t with the best mean net value per labeled query (P out of
            sample), before the one-SE rule.
        net_value: Mean net value per labeled query at ``threshold``, in tokens.
        net_value_se: Its standard error.
        threshold_rule: How ``threshold`` was chosen, in words.
        scoring: The index settings its scores were made with
            (``ctxselect.manifest.Manifest.scoring``; empty: written before they were
            recorded). Once the index is re-chunked or re-weighted the fit no longer
            describes its scores, so :func:`calibrations` sets it aside.
    """

    mode: str
    model: Model
    threshold: float
    ece: float
    log_loss: float
    brier: float
    base_rate: float
    n_queries: int
    n_chunks: int
    depth: int
    folds: int
    turns: int
    cache_factor: float
    value: float
    chunk_tokens: float
    cost_threshold: float = 0.0
    label_threshold: float = 0.0
    net_value: float = 0.0
    net_value_se: float = 0.0
    threshold_rule: str = "cost model"
    scoring: str = ""

    def to_manifest(self) -> dict[str, Any]:
        """Return the JSON-able form the manifest keeps."""
        data = asdict(self)
        data["features"] = list(FEATURES)
        return data

    @classmethod
    def from_manifest(cls, data: Mapping[str, Any]) -> Calibration | None:
        """Rebuild a calibration from the manifest (None if it is not one this code reads)."""
        try:
            if list(data.get("features", [])) != list(FEATURES):
                return None
            raw = dict(data["model"])
            model = Model(tuple(raw["coef"]), tuple(raw["center"]), tuple(raw["scale"]))
            fields = {  # a field with a default may be absent (written by an older tune)
                k: data[k]
                for k, f in cls.__dataclass_fields__.items()
                if k != "model" and (k in data or f.default is MISSING)
            }
            made = cls(model=model, **fields)
        except (KeyError, TypeError, ValueError):
            return None
        ok = len(model.coef) == len(FEATURES) + 1 and all(map(math.isfinite, model.coef))
        return made if ok else None


def calibrations(
    stored: Mapping[str, Any] | None, scoring: str | None = None
) -> dict[str, Calibration]:
    """Return the calibrations an index manifest stores (``Manifest.calibration``), by
    mode (unreadable ones skipped, and, given the index's ``scoring``
    (``Manifest.scoring``), those fitted on scores of other settings: :func:`stale`)."""
    if not isinstance(stored, Mapping):
        return {}
    out = {}
    for mode, data in stored.items():
        made = Calibration.from_manifest(data) if isinstance(data, Mapping) else None
        if made is not None and not (scoring and made.scoring and made.scoring != scoring):
            out[str(mode)] = made
    return out


def stale(stored: Mapping[str, Any] | None, scoring: str) -> dict[str, str]:
    """mode -> the settings a stored calibration was fitted with, for each one whose
    settings are no longer the index's ``scoring``: its P(relevant) would describe
    other chunks or weights, so ``stop="auto"`` uses the uncalibrated rule until
    ``tune`` runs again."""
    every = calibrations(stored)
    return {m: c.scoring for m, c in every.items() if c.scoring and c.scoring != scoring}


def with_p(hits: Sequence[Hit], calibration: Calibration | None) -> list[Hit]:
    """Return ``hits`` (one query's ranking, best first) with ``p_relevant`` set."""
    if calibration is None or not hits:
        return list(hits)
    ps = calibration.model.predict([h.score for h in hits])
    return [replace(h, p_relevant=round(p, 6)) for h, p in zip(hits, ps, strict=True)]


def summary(
    stored: Mapping[str, Any] | None, scoring: str | None = None
) -> dict[str, dict[str, float | int]]:
    """Per calibrated mode of ``stored`` (``Manifest.calibration``; stale ones left out,
    see :func:`calibrations`), what ``ctxselect info`` shows: reliability and threshold."""
    return {
        mode: {
            "ece": c.ece,
            "threshold": c.threshold,
            "n_queries": c.n_queries,
            "turns": c.turns,
            "cache_factor": c.cache_factor,
        }
        for mode, c in calibrations(stored, scoring).items()
    }


def describe_auto(
    stored: Mapping[str, Any] | None, modes: Sequence[str], scoring: str | None = None
) -> dict[str, str]:
    """Say, per mode, what ``stop="auto"`` does on an index calibrated as ``stored``
    (``Manifest.calibration``) whose settings are ``scoring`` (``ctxselect info`` shows
    it)."""
    found = calibrations(stored, scoring)
    old = stale(stored, scoring) if scoring else {}
    out = {}
    for mode in modes:
        cal = found.get(mode)
        if cal is not None:
            out[mode] = (
                f"calibrated: keep a chunk of n tokens while P(relevant) >= "
                f"{cal.threshold:.3f} x (n / {cal.chunk_tokens:.0f}) x (1 + the relevant "
                f"chunks expected above) (out-of-sample ECE {cal.ece:.3f}, "
                f"{cal.n_queries} queries)"
            )
        elif mode in old:
            out[mode] = (
                f"uncalibrated: cut at the largest score gap among the top 20; the stored "
                f"calibration was fitted with {old[mode]}, and the index now has "
                f"{scoring} (run `ctxselect tune` again to calibrate)"
            )
        else:
            out[mode] = (
                "uncalibrated: cut at the largest score gap among the top 20 "
                "(run `ctxselect tune` to calibrate)"
            )
    return out


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """What calibration fitted, per mode, and the modes it could not fit.

    Attributes:
        index: The index calibrated.
        calibrations: One per calibrated mode.
        skipped: mode -> why it was not calibrated (e.g. no dense vectors).
        n_queries: Labeled queries used.
        folds: Cross-validation folds of the reported ECE, log loss and Brier score.
        seed: Seed of the fold assignment.
    """

    index: str
    calibrations: tuple[Calibration, ...]
    skipped: dict[str, str]
    n_queries: int
    folds: int
    seed: int


def calibrate(
    mode: str,
    rankings: Mapping[str, tuple[Sequence[float], Sequence[int]]],
    fold: Mapping[str, int],
    *,
    depth: int,
    turns: int,
    cache_factor: float,
    value: float,
    chunk_tokens: float,
) -> Calibration:
    """Fit ``mode``'s model on every query and measure it out of sample by ``fold``."""
    reliability = cross_validate(rankings, fold)
    formula = round(cost_threshold(chunk_tokens, turns, cache_factor, value), 6)
    return Calibration(
        mode=mode,
        model=fit(list(rankings.values())),
        threshold=formula,
        ece=round(reliability.ece, 6),
        log_loss=round(reliability.log_loss, 6),
        brier=round(reliability.brier, 6),
        base_rate=round(reliability.base_rate, 6),
        n_queries=len(rankings),
        n_chunks=reliability.n_chunks,
        depth=depth,
        folds=len(set(fold.values())),
        turns=turns,
        cache_factor=cache_factor,
        value=value,
        chunk_tokens=round(chunk_tokens, 3),
        cost_threshold=formula,
        label_threshold=formula,
    )

"""Budgeted selections scored against labels, and how they stop (``eval`` and ``sweep``).

The blocks :mod:`ctxselect.api.evaluate` and :mod:`ctxselect.api.sweep` measure with: the
depth a selection considers, the stop plan (the rule and, when calibrated, a P(relevant)
model per query fitted out of sample, k-fold by query), and the selections made as
``ctxselect select`` makes them, scored with the budget metrics. Like
:mod:`ctxselect.api`, this module composes stages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxselect import budget as _budget
from ctxselect import eval as _eval
from ctxselect.api.calibrate import choose_threshold
from ctxselect.budget import calibration as _calibration
from ctxselect.budget import stop as _stop
from ctxselect.errors import ConfigError
from ctxselect.eval.folds import fold_of
from ctxselect.tokens import MemoCounter
from ctxselect.types import Hit

if TYPE_CHECKING:
    from ctxselect.budget.calibration import Calibration, Model

STOP_FOLDS = _eval.STOP_FOLDS
"""Folds of the out-of-sample calibration that ``eval`` and ``sweep`` stop with."""
STOP_SEED = _eval.STOP_SEED
STOP_MIN_QUERIES = 10
"""Labeled queries needed to calibrate (as ``tune``); fewer -> the uncalibrated rule."""
CALIBRATION_DEPTH = 100
"""Ranked chunks per query fitted on (as ``tune``)."""
UNCALIBRATED_RULE = "uncalibrated rule"


def selection_depth(budget: int, n_tokens: Sequence[int]) -> int:
    """Ranked chunks considered for ``budget``, as ``Index.select`` considers them.

    Enough chunks of the mean size to fill the budget three times over, at least 50.
    """
    return _budget.depth_for_budget(budget, sum(n_tokens) / len(n_tokens) if n_tokens else 1.0)


@dataclass(frozen=True, slots=True)
class StopPlan:
    """How measured selections stop: the rule and, when calibrated, each query's model.

    Attributes:
        rule: ``none``, ``auto`` or a P(relevant) threshold (see :mod:`ctxselect.budget.stop`).
        models: qid -> the model giving its chunks' P(relevant) (empty: uncalibrated).
        threshold: The P ``auto`` stops below (None without calibration).
        calibration: What the output says: ``out of sample, 5 folds``,
            ``stored in the index``, ``uncalibrated rule`` ("" for ``none``).
        chunk_tokens: n̄, the chunk size ``threshold`` is set for (``auto`` prices each
            chunk by its own size relative to it; None: no such pricing).
    """

    rule: str | float
    models: Mapping[str, Model]
    threshold: float | None
    calibration: str
    chunk_tokens: float | None = None
    thresholds: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """qid -> the t ``auto`` uses for it, chosen on the other folds' labels (empty: use
    ``threshold``)."""


def plan_stop(
    stop: object,
    hits: Mapping[str, Sequence[Hit]],
    labels: _eval.Labels,
    mean_chunk_tokens: float,
    *,
    stored: Calibration | None = None,
    use_stored: bool = False,
    folds: int = STOP_FOLDS,
    seed: int = STOP_SEED,
) -> StopPlan:
    """Decide how ``eval``/``sweep`` selections stop, never calibrating on evaluated labels.

    With labels the calibration is fitted per fold (k-fold by query, as
    :func:`ctxselect.eval.folds.fold_of`) on the other folds' queries and applied to the
    held-out queries' rankings; ``use_stored`` uses the index's stored calibration instead
    (which may have been fitted on these very labels: the caller's choice, and said so).
    The threshold of ``auto`` is chosen as ``tune`` chooses it (the cost model's t, with
    ``tune``'s defaults and the index mean chunk, unless the labels disagree by more than
    one SE: :func:`ctxselect.api.calibrate.choose_threshold`), per fold on the other folds'
    queries, so neither P nor t ever saw the labels of the queries they stop.

    Raises:
        ConfigError: ``stop`` is invalid, or a P threshold with no calibration to give P.
    """

    rule = _stop.check_stop(stop)
    if rule == "none":
        return StopPlan(rule, {}, None, "")
    if use_stored:
        if stored is None:
            return StopPlan(rule, {}, None, f"{UNCALIBRATED_RULE} (the index has no calibration)")
        models = {q: stored.model for q in hits}
        return StopPlan(rule, models, stored.threshold, "stored in the index", stored.chunk_tokens)
    evaluated = set(labels.evaluated())
    rankings = {
        q: (
            [h.score for h in top],
            [int(labels.grade(q, h.doc_id, h.start, h.end) >= 1) for h in top],
        )
        for q, top in ((q, ranked[:CALIBRATION_DEPTH]) for q, ranked in hits.items())
        if q in evaluated
    }
    need = max(STOP_MIN_QUERIES, folds)
    if len(rankings) < need:
        why = f"{len(rankings)} labeled queries, fewer than {need} to calibrate"
        if isinstance(rule, float):
            raise _stop_error(rule, why)
        return StopPlan(rule, {}, None, f"{UNCALIBRATED_RULE} ({why})")
    fold = fold_of(sorted(hits), folds, seed)
    models = _calibration.out_of_sample_models(rankings, fold)
    threshold = _calibration.cost_threshold(
        mean_chunk_tokens, _eval.DEFAULT_TURNS, _eval.CACHED_FACTOR
    )
    sizes = {q: [h.n_tokens for h in hits[q][:CALIBRATION_DEPTH]] for q in rankings}
    thresholds = _fold_thresholds(rankings, sizes, fold, threshold, mean_chunk_tokens)
    return StopPlan(
        rule,
        models,
        round(threshold, 6),
        f"out of sample, {folds} folds",
        mean_chunk_tokens,
        thresholds,
    )


def _fold_thresholds(
    rankings: Mapping[str, tuple[list[float], list[int]]],
    sizes: Mapping[str, list[int]],
    fold: Mapping[str, int],
    formula: float,
    mean_tokens: float,
) -> dict[str, float]:
    """qid -> the t chosen on the other folds' queries, each scored by a model fitted
    without its own fold and without the held-out one (nested)."""
    bill = 1 + (_eval.DEFAULT_TURNS - 1) * _eval.CACHED_FACTOR
    out: dict[str, float] = {}
    for f in sorted(set(fold.values())):
        held = [q for q in rankings if fold.get(q) == f]
        train = {q: r for q, r in rankings.items() if fold.get(q) != f}
        inner = _calibration.out_of_sample_models(train, {q: fold[q] for q in train})
        scored = [
            (inner[q].predict(scores), labels, sizes[q])
            for q, (scores, labels) in train.items()
            if q in inner and scores
        ]
        t = formula
        if scored:
            t = choose_threshold(
                scored, formula, mean_tokens, value=_calibration.DEFAULT_VALUE, bill=bill
            ).threshold
        out.update({q: t for q in held})
    return out


def _stop_error(rule: float, why: str) -> ConfigError:
    return ConfigError(
        f"stop={rule:g} needs a calibrated P(relevant) and none can be fitted out of sample "
        f"({why}): label more queries, or stop by auto or none instead (eval --stop, sweep --stops)"
    )


def stopped_hits(
    ranked: Sequence[Hit], qid: str, plan: StopPlan | None, depth: int | None = None
) -> Sequence[Hit]:
    """The hits a selection of the first ``depth`` may take for ``qid`` under ``plan`` (all
    of them for ``none``). P(relevant) is computed on the whole ranking, as ``Index.search``
    computes it on at least ``calibration.STATS_DEPTH`` hits, before the list is cut."""
    if plan is None or plan.rule == "none":
        return ranked[:depth]
    model = plan.models.get(qid)
    if model is not None and ranked:
        ps = model.predict([h.score for h in ranked])
        ranked = [dataclasses.replace(h, p_relevant=p) for h, p in zip(ranked, ps, strict=True)]
    ranked = ranked[:depth]
    if model is None and isinstance(plan.rule, float):
        ranked = [dataclasses.replace(h, p_relevant=0.0) for h in ranked]  # no model: stop
    chosen = plan.thresholds.get(qid, plan.threshold)
    threshold, mean = (chosen, plan.chunk_tokens) if model else (None, None)
    return _stop.cut_hits(ranked, plan.rule, threshold, mean).kept


def measure_budgets(
    hits: Mapping[str, Sequence[Hit]],
    labels: _eval.Labels,
    settings: Sequence[tuple[str, int]],
    *,
    counter: MemoCounter,
    n_tokens: Sequence[int],
    span_text: Callable[[str, int, int], str],
    format: str,
    stop: StopPlan | None = None,
) -> dict[tuple[str, int], dict[str, dict[str, float]]]:
    """Select under each (packer, budget) for every query and score the selections.

    Selections are made as ``ctxselect select`` makes them: the ``selection_depth`` best
    hits, cut where ``stop`` says (default: fill the budget), the registered packer,
    framing counted in the tokenizer.

    Returns:
        (packer, budget) -> qid -> {``recall@Bt``: ..., ...} for every query in ``hits``.
    """
    packers = {
        name: _budget.make_packer(name, counter, format=format, span_text=span_text)
        for name in dict.fromkeys(p for p, _ in settings)
    }
    depths = {b: selection_depth(b, n_tokens) for _, b in settings}
    out: dict[tuple[str, int], dict[str, dict[str, float]]] = {s: {} for s in settings}
    for qid, ranked in hits.items():
        for packer, budget in settings:
            kept = stopped_hits(ranked, qid, stop, depths[budget])
            selection = packers[packer].pack(kept, budget)
            values = _eval.score_selection(selection, labels, qid)
            names_at = _eval.budget_metric_names(budget)
            out[(packer, budget)][qid] = {
                n: values[m] for n, m in zip(names_at, _eval.BUDGET_METRICS, strict=True)
            }
    return out

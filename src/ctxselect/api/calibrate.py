"""Calibrate P(relevant) per retrieval mode on labeled queries, and choose the stop threshold.

:func:`calibrate_index` ranks each labeled query 100 chunks deep in every mode the index
can search, fits :mod:`ctxselect.budget.calibration`'s model on every query, measures it
out of sample (k-fold by query), and stores it with the threshold t of ``stop="auto"``.

The threshold starts from the cost model: t = min(1, n̄ × (1 + (T − 1) × c) / V). The
labels then check it, with the rule fusion tuning uses (one standard error, Hastie,
Tibshirani & Friedman, *ESL* §7.10): each query's net value under the same cost model (the
k-th relevant chunk kept is worth V / k tokens, every token sent costs 1 + (T − 1) × c)
is computed at the cost model's t and at :data:`GRID` thresholds, with P out of sample
(each query's P from a model fitted on the other folds). The cost model's t is kept when
its mean net value is within one paired standard error of the best threshold's; otherwise
the t closest to it (on a log scale) that is within one SE is taken. A calibrated P makes
the formula right in expectation, so the labels move t only when they disagree clearly.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctxselect import eval as _eval
from ctxselect.api.read import Index, open_index
from ctxselect.budget import calibration as _calibration
from ctxselect.budget.stop import auto_kept
from ctxselect.embed import Embedder
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.folds import DEFAULT_FOLDS, fold_of
from ctxselect.eval.one_se import one_se_choice, paired_se
from ctxselect.ingest.kinds import BEIR_SUFFIXES
from ctxselect.ingest.walk import BEIR_CORPUS, is_beir_folder
from ctxselect.retrieve.modes import MODES

MIN_CALIBRATION_QUERIES = 10
DEFAULT_TURNS = _eval.DEFAULT_TURNS
DEFAULT_CACHE_FACTOR = _eval.CACHED_FACTOR
CalibrationReport = _calibration.CalibrationReport
CALIBRATION_DEPTH = 100
"""Chunks ranked per labeled query when calibrating P(relevant)."""
GRID = tuple(float(t) for t in np.round(np.geomspace(0.01, 1.0, 41), 4))
"""Thresholds the labels are asked about, beside the cost model's own."""

Ranking = tuple[Sequence[float], Sequence[int]]
"""One query's ranked scores (best first) and 0/1 labels."""


@dataclass(frozen=True, slots=True)
class ThresholdChoice:
    """The stop threshold the labels leave (or move) the cost model's t at.

    Attributes:
        threshold: The t chosen.
        cost_threshold: The cost model's t.
        label_threshold: The t with the best mean net value.
        net_value: Mean net value per query at ``threshold``, in tokens.
        net_value_se: Its paired standard error against the best.
        rule: How it was chosen, in words.
    """

    threshold: float
    cost_threshold: float
    label_threshold: float
    net_value: float
    net_value_se: float
    rule: str


def net_value(
    relevant: Sequence[int], tokens: Sequence[int], keep: int, value: float, bill: float
) -> float:
    """The cost model's net value of the first ``keep`` chunks, in tokens: the k-th
    relevant one is worth ``value / k``, every token costs ``bill``."""
    found = int(sum(relevant[:keep]))
    return value * sum(1.0 / k for k in range(1, found + 1)) - bill * float(sum(tokens[:keep]))


def choose_threshold(
    queries: Sequence[tuple[Sequence[float], Sequence[int], Sequence[int]]],
    formula: float,
    mean_tokens: float,
    *,
    value: float,
    bill: float,
) -> ThresholdChoice:
    """Choose t from the cost model's ``formula`` and the labels (see the module docstring).

    Args:
        queries: Per labeled query: P (out of sample), 0/1 labels and tokens of its
            ranked chunks, best first.
        formula: The cost model's t.
        mean_tokens: n̄, the chunk size t is set for.
        value: V, what a query's first relevant chunk is worth in tokens.
        bill: What a token sent costs over the turns, 1 + (T − 1) × c.
    """
    grid = [formula, *(t for t in GRID if not math.isclose(t, formula))]
    table = np.array(
        [
            [
                net_value(rel, toks, auto_kept(ps, toks, t, mean_tokens), value, bill)
                for ps, rel, toks in queries
            ]
            for t in grid
        ]
    )
    order = sorted(range(len(grid)), key=lambda i: abs(math.log(grid[i] / formula)))
    chosen = one_se_choice(table, order)
    best = int(np.argmax(table.mean(axis=1)))
    se = float(paired_se(table, best)[chosen])
    rule = (
        "cost model (the labels' best t is within one SE)"
        if chosen == 0
        else f"labels, one-SE rule toward the cost model's t {formula:.3f}"
    )
    return ThresholdChoice(
        threshold=round(grid[chosen], 6),
        cost_threshold=round(formula, 6),
        label_threshold=round(grid[best], 6),
        net_value=round(float(table[chosen].mean()), 1),
        net_value_se=round(se, 1),
        rule=rule,
    )


def calibrate_index(
    index: str | os.PathLike[str] | None,
    queries: str | os.PathLike[str],
    qrels: str | os.PathLike[str] | None = None,
    *,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    turns: int = DEFAULT_TURNS,
    cache_factor: float = DEFAULT_CACHE_FACTOR,
    value: float = _calibration.DEFAULT_VALUE,
    depth: int = CALIBRATION_DEPTH,
    embedder: Embedder | str | None = None,
    write: bool = True,
    wait: float = 0.0,
) -> _calibration.CalibrationReport:
    """Fit P(relevant) per retrieval mode on labeled queries and store it in the index.

    Each labeled query is ranked ``depth`` chunks deep in every mode the index can search
    (dense and hybrid are skipped, and said so, when the index has no dense vectors); a
    chunk is relevant when its document has grade >= 1 in the qrels (as ``eval`` judges
    chunk runs). The model (:mod:`ctxselect.budget.calibration`) is fitted on every query;
    its ECE, log loss and Brier score are measured out of sample, k-fold by query
    (:func:`fold_of`). The stopping threshold of ``stop="auto"`` is the cost model's
    ``min(1, n × (1 + (turns − 1) × cache_factor) / value)`` with n the mean chunk size,
    unless the labels disagree by more than one SE (:func:`choose_threshold`).

    Raises:
        InputError: Fewer than 10 labeled queries fit the index.
        ConfigError: ``folds``, ``turns``, ``cache_factor`` or ``value`` is out of range.
    """
    if not (turns >= 1 and 0.0 <= cache_factor <= 1.0 and value > 0):
        raise ConfigError(
            f"calibration needs turns >= 1, a cache factor in [0, 1] and a value > 0 tokens, "
            f"got turns={turns}, cache_factor={cache_factor}, value={value}"
        )
    with open_index(index, embedder=embedder) as idx:
        doc_ids = set(idx.store.doc_hashes())
        labeled = _eval.load_labeled_set(queries, qrels, None, doc_ids, len)
        qrel = labeled.labels.qrels
        texts = indexed_queries(labeled, doc_ids)
        if len(texts) < MIN_CALIBRATION_QUERIES:
            raise too_few_error(idx.path, labeled, doc_ids, len(texts))
        if isinstance(folds, bool) or not isinstance(folds, int) or not 2 <= folds <= len(texts):
            raise ConfigError(f"folds must be a whole number from 2 to {len(texts)}, got {folds!r}")
        fold = fold_of(list(texts), folds, seed)
        counts = idx.store.counts()
        chunk_tokens = counts["tokens"] / max(1, counts["chunks"])
        done, skipped = [], {}
        for mode in idx.modes():
            if MODES.get(mode).needs_embedder and idx.settings.embedder is None:
                skipped[mode] = "the index has no dense vectors"
                continue
            ranked = idx.retriever(mode).search_many(texts, depth)
            rankings = {
                q: ([h.score for h in hits], [int(qrel[q].get(h.doc_id, 0) >= 1) for h in hits])
                for q, hits in ranked.items()
            }
            if not any(scores for scores, _ in rankings.values()):
                skipped[mode] = "no labeled query has a ranked chunk in this mode"
                continue
            made = _calibration.calibrate(
                mode,
                rankings,
                fold,
                depth=depth,
                turns=turns,
                cache_factor=cache_factor,
                value=value,
                chunk_tokens=chunk_tokens,
            )
            made = dataclasses.replace(made, scoring=idx.settings.scoring())
            sizes = {q: [h.n_tokens for h in hits] for q, hits in ranked.items()}
            done.append(_with_threshold(made, rankings, sizes, fold))
        report = _calibration.CalibrationReport(
            idx.path, tuple(done), skipped, len(texts), folds, seed
        )
        if write and done:
            stored = {c.mode: c.to_manifest() for c in done}
            with idx.store.lock(wait):
                idx.store.commit_settings({"calibration": stored})
        return report


@dataclass(frozen=True, slots=True)
class LabelMismatches:
    """Judgments that fit neither the queries file nor the index, counted and named.

    The fields are named as in ``EvalResult`` (``ctxselect eval``), which reports the same.

    Attributes:
        unknown_queries_in_qrels: Judged query ids the queries file lacks (not asked).
        unknown_query_ids: Those ids, sorted.
        unknown_docs_in_qrels: Judgments (query, document) naming documents not indexed.
        unknown_doc_ids: Their distinct document ids, sorted.
        unmatched_labels: Lab labels (``{"query", "label"}`` queries) matching no
            indexed document, in file order: their queries are not used.
        empty_docs_in_qrels: Judgments naming documents the index's corpus holds with no
            text (ingest skipped them, so they were never indexed), not counted in
            ``unknown_docs_in_qrels``.
        empty_doc_ids: Their distinct document ids, sorted.
    """

    unknown_queries_in_qrels: int = 0
    unknown_query_ids: tuple[str, ...] = ()
    unknown_docs_in_qrels: int = 0
    unknown_doc_ids: tuple[str, ...] = ()
    unmatched_labels: tuple[str, ...] = ()
    empty_docs_in_qrels: int = 0
    empty_doc_ids: tuple[str, ...] = ()


def label_mismatches(labeled: _eval.LabeledSet) -> LabelMismatches:
    """What of ``labeled``'s judgments its queries file or corpus does not know."""
    return LabelMismatches(
        labeled.unknown_queries,
        labeled.unknown_query_ids,
        labeled.unknown_docs,
        labeled.unknown_doc_ids,
        labeled.unmatched_labels,
        labeled.empty_docs,
        labeled.empty_doc_ids,
    )


def with_empty_judged(
    labeled: _eval.LabeledSet, roots: Sequence[str], doc_ids: set[str]
) -> _eval.LabeledSet:
    """``labeled`` with judgments of documents the index's ``roots`` hold without text
    counted apart from unknown ones, as ``eval`` counts them.

    Ingest skips an empty document (Cranfield's ``995``), so the index has never heard
    of it; its judgments still count in every metric (nothing can retrieve it).
    """
    if not labeled.unknown_docs:
        return labeled
    return _eval.note_empty_documents(labeled, _corpus_sources(roots), doc_ids)


def _corpus_sources(roots: Sequence[str]) -> list[Path]:
    """Where ingest read an index's documents from its ``roots``: each BEIR corpus file
    (a dataset folder's ``corpus.jsonl``), and the folder file ids are relative to."""
    sources: list[Path] = []
    folders: list[str] = []
    for root in map(Path, roots):
        if root.is_dir() and is_beir_folder({p.name for p in root.iterdir()}):
            sources.append(root / BEIR_CORPUS)
        elif root.suffix in BEIR_SUFFIXES and root.is_file():
            sources.append(root)
        elif root.exists():
            folders.append(str(root if root.is_dir() else root.parent))
    if folders:
        sources.append(Path(os.path.commonpath(folders)))
    return sources


def index_label_mismatches(
    index: str | os.PathLike[str] | None,
    queries: str | os.PathLike[str],
    qrels: str | os.PathLike[str] | None = None,
) -> LabelMismatches:
    """Read the labels against a stored index and say what of them it does not know.

    Raises:
        InputError: A file is malformed, or no query has a relevant document.
    """
    with open_index(index) as idx:
        return label_mismatches(indexed_labels(idx, queries, qrels)[0])


def indexed_labels(
    idx: Index, queries: str | os.PathLike[str], qrels: str | os.PathLike[str] | None
) -> tuple[_eval.LabeledSet, set[str]]:
    """The labels read against ``idx`` (judgments of documents its corpus holds empty
    counted apart, :func:`with_empty_judged`), and the ids of the documents it holds."""
    doc_ids = set(idx.store.doc_hashes())
    labeled = _eval.load_labeled_set(queries, qrels, None, doc_ids, len)
    return with_empty_judged(labeled, idx.settings.roots, doc_ids), doc_ids


def indexed_queries(labeled: _eval.LabeledSet, doc_ids: set[str]) -> dict[str, str]:
    """qid -> text of the labeled queries with a relevant document (grade >= 1) that the
    index holds: a query whose relevant documents are all elsewhere has only negative
    labels here, and fitting on it would teach P(relevant) that nothing is ever relevant."""
    qrels = labeled.labels.qrels
    return {
        q: text
        for q, text in labeled.queries.items()
        if any(g >= 1 and d in doc_ids for d, g in qrels.get(q, {}).items())
    }


def too_few_error(
    path: str,
    labeled: _eval.LabeledSet,
    doc_ids: set[str],
    found: int,
    *,
    what: str = "calibration",
    need: int = MIN_CALIBRATION_QUERIES,
) -> InputError:
    """The error for fewer than ``need`` queries with a relevant indexed document: when
    labeled queries judge only documents the index lacks, it says so and names one."""
    head = (
        f"{what} needs at least {need} labeled queries with a relevant document in "
        f"index {path}, found {found}"
    )
    skipped = len(labeled.queries) - found
    if not skipped:
        return InputError(f"{head}: label more queries")
    relevant = {d for judged in labeled.labels.qrels.values() for d, g in judged.items() if g >= 1}
    wanted = sorted(relevant - doc_ids)
    held = ", ".join(repr(d) for d in sorted(doc_ids)[:2]) or "no document"
    return InputError(
        f"{head}: {skipped} labeled queries judge relevant only documents the index lacks "
        f"(e.g. {wanted[0]!r}; the index holds {held}, ...): pass the labels of the corpus "
        "this index was built from, or index the corpus the labels judge"
    )


def _with_threshold(
    made: _calibration.Calibration,
    rankings: Mapping[str, Ranking],
    sizes: Mapping[str, Sequence[int]],
    fold: Mapping[str, int],
) -> _calibration.Calibration:
    """``made`` with the threshold :func:`choose_threshold` leaves or moves it to."""
    models = _calibration.out_of_sample_models(rankings, fold)
    queries = [
        (models[q].predict(scores), labels, sizes[q])
        for q, (scores, labels) in rankings.items()
        if q in models and scores
    ]
    choice = choose_threshold(
        queries,
        made.threshold,
        made.chunk_tokens,
        value=made.value,
        bill=1 + (made.turns - 1) * made.cache_factor,
    )
    return dataclasses.replace(
        made,
        threshold=choice.threshold,
        cost_threshold=choice.cost_threshold,
        label_threshold=choice.label_threshold,
        net_value=choice.net_value,
        net_value_se=choice.net_value_se,
        threshold_rule=choice.rule,
    )


__all__ = [
    "CALIBRATION_DEPTH",
    "MIN_CALIBRATION_QUERIES",
    "CalibrationReport",
    "LabelMismatches",
    "ThresholdChoice",
    "calibrate_index",
    "choose_threshold",
    "index_label_mismatches",
    "indexed_labels",
    "indexed_queries",
    "label_mismatches",
    "net_value",
    "too_few_error",
    "with_empty_judged",
]

"""The facade's sweeping half: measure a grid of settings against one labeled set.

``run_sweep`` crosses chunker × chunk size × mode × packer × budget on one corpus and
one set of labels and writes a results folder: ``results.jsonl``, ``tables.txt``, PNG
plots and ``report.html``. Its building blocks (budgeted selections scored against
labels, :mod:`ctxselect.api.selections`) serve ``evaluate.evaluate_corpus`` too; the
grid and the results folder come from :mod:`ctxselect.api.sweep_setup` (``sweep_grid``
re-exported here). Like :mod:`ctxselect.api`, this module composes stages.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ctxselect import chunk as _chunk
from ctxselect import embed as _embed
from ctxselect import eval as _eval
from ctxselect import ingest as _ingest
from ctxselect._require import require
from ctxselect.api import modes as _modes
from ctxselect.api.eval_scoring import with_empty_documents
from ctxselect.api.read import retriever_for
from ctxselect.api.selections import (
    CALIBRATION_DEPTH,
    STOP_FOLDS,
    STOP_MIN_QUERIES,
    UNCALIBRATED_RULE,
    StopPlan,
    measure_budgets,
    plan_stop,
    selection_depth,
    stopped_hits,
)
from ctxselect.api.sweep_setup import check_grid, dataset_name, default_sweep_dir, sweep_grid
from ctxselect.config import BM25_KEY, BM25Params, ChunkSpec, FuseSpec
from ctxselect.errors import InputError
from ctxselect.eval import SweepGrid, SweepReport
from ctxselect.ingest.walk import walks_every_file
from ctxselect.retrieve.base import Retriever
from ctxselect.tokens import MemoCounter
from ctxselect.types import Chunk, Document

_P = str | os.PathLike[str]

SWEEP_METRICS = ("hit@1", "ndcg@10", "recall@100")
DEFAULT_EPSILON = _eval.DEFAULT_EPSILON
DEFAULT_GAIN_PER_1K = _eval.DEFAULT_GAIN_PER_1K
DEFAULT_KNEE_METRIC = _eval.DEFAULT_KNEE_METRIC
KNEE_METRICS = _eval.KNEE_METRICS
DEFAULT_TURNS = _eval.DEFAULT_TURNS
CACHED_FACTOR = _eval.CACHED_FACTOR
EMPTY_DOCS_NOTE = _eval.EMPTY_DOCS_NOTE
VECTORS_DIR = "vectors"
"""The results folder's vector cache (one ``.npz`` per model): chunks embedded once."""


def _modes_extra(embedder: _embed.Embedder | None) -> dict[str, Mapping[str, object]]:
    if embedder is None:
        return {}
    extra: dict[str, Mapping[str, object]] = {}
    for mode in _modes.embedding_modes():
        fused = mode in _modes.fusion_modes()
        fusion = {"fusion": dataclasses.asdict(FuseSpec())} if fused else {}
        extra[mode] = {"embedder": embedder.model_id, **fusion}
    return extra


class _Sweep:
    """One sweep's fixed context: the documents, the labels and the result book."""

    def __init__(
        self,
        book: _eval.ResultBook,
        metrics: tuple[str, ...],
        bm25: BM25Params,
        labeled: _eval.LabeledSet,
        documents: Sequence[Document],
        embedder: _embed.Embedder | None = None,
    ) -> None:
        self.book, self.metrics, self.bm25, self.labeled = book, metrics, bm25, labeled
        self.embedder = embedder
        self.documents = {d.doc_id: d for d in documents}
        self.texts = {d.doc_id: d.text for d in documents}

    def chunks(self, chunker: str, size: int) -> list[Chunk]:
        """Chunk every document once for (chunker, size)."""
        spec = ChunkSpec(chunker=chunker, size=size, tokenizer=self.book.grid.tokenizer)
        make = _chunk.make_chunker(spec)
        return [c for doc_id in sorted(self.documents) for c in make.chunk(self.documents[doc_id])]

    def ranking_rows(
        self, retriever: Retriever, chunks: Sequence[Chunk], setting: tuple[str, int, str]
    ) -> list[_eval.ResultRow]:
        """Measure the ranking metrics and chunk statistics of one (chunker, size, mode)."""
        queries, labels = self.labeled.queries, self.labeled.labels
        depth = max(spec.k for spec in _eval.parse_metrics(self.metrics))
        top3 = retriever.search_many(queries, 3)
        if self.book.level == "doc":
            ranked = _eval.rank_documents(retriever.search_many, queries, depth)
            run = _eval.collapse_to_docs(ranked)
            qrels = labels.qrels
        else:
            hits = retriever.search_many(queries, depth)
            run = {q: {h.chunk_id: h.score for h in hs} for q, hs in hits.items()}
            columns = zip(*((c.chunk_id, c.doc_id, c.start, c.end) for c in chunks), strict=True)
            qrels = labels.chunk_qrels(*columns)
        report = _eval.evaluate(run, qrels, list(self.metrics))
        values = dict(report.mean)
        values[_eval.MEAN_CHUNK_TOKENS] = sum(c.n_tokens for c in chunks) / max(1, len(chunks))
        top3_tokens = [sum(h.n_tokens for h in hs[:3]) for hs in top3.values()]
        values[_eval.TOP3_TOKENS] = sum(top3_tokens) / max(1, len(top3_tokens))
        full = (*setting, None, None, None)
        return [self.book.row(full, m, v, report.n_queries, len(chunks)) for m, v in values.items()]

    def budget_rows(
        self,
        retriever: Retriever,
        chunks: Sequence[Chunk],
        setting: tuple[str, int, str],
        todo: Sequence[tuple[str, int, str]],
    ) -> list[_eval.ResultRow]:
        """Measure the budget metrics of (chunker, size, mode) per (packer, budget, stop).

        Stop rules other than ``none`` are calibrated out of sample (:func:`plan_stop`).
        """
        queries = self.labeled.queries
        n_tokens = [c.n_tokens for c in chunks]
        depth = selection_depth(max(b for _, b, _ in todo), n_tokens)
        if any(stop != "none" for _, _, stop in todo):
            depth = max(depth, CALIBRATION_DEPTH)
        hits = retriever.search_many(queries, depth)
        rows = []
        for stop in dict.fromkeys(s for _, _, s in todo):
            plan = plan_stop(stop, hits, self.labeled.labels, sum(n_tokens) / max(1, len(n_tokens)))
            measured = measure_budgets(
                hits,
                self.labeled.labels,
                [(p, b) for p, b, s in todo if s == stop],
                counter=MemoCounter(self.book.grid.tokenizer),
                n_tokens=n_tokens,
                span_text=lambda d, s, e: self.texts[d][s:e],
                format=self.book.grid.format,
                stop=plan,
            )
            for (packer, budget), per_query in measured.items():
                for name in _eval.budget_metric_names(budget):
                    mean = sum(values[name] for values in per_query.values()) / len(queries)
                    full = (*setting, packer, budget, stop)
                    rows.append(self.book.row(full, name, mean, len(queries), len(chunks)))
        return rows

    def summarize(
        self,
        folder: Path,
        inputs: tuple[object, object],
        settings: tuple[_eval.KneeSettings, float, int, float],
        counts: tuple[int, int, float],
    ) -> SweepReport:
        """Build the report from the rows of this grid in ``folder/results.jsonl``.

        Only rows keyed for this grid at this results version are read, so rows of an
        earlier version (another meaning of a metric) are never mixed in.
        """
        book, labeled, grid = self.book, self.labeled, self.book.grid
        knees, gain, turns, cache_factor = settings
        wanted = {book.key(s) for s in book.settings()}
        rows = [r for r in _eval.read_results(folder / _eval.RESULTS_FILE) if r.key in wanted]
        curves = _eval.curves(rows, grid, knees)
        best, knee = _eval.recommend(curves, knees)
        chosen = next(c for c in curves if c.label == best)
        return SweepReport(
            dataset=book.dataset,
            corpus=str(inputs[0]),
            queries_file=str(inputs[1]),
            labels_file=labeled.labels_file,
            label_kind=labeled.labels.kind,
            level=book.level,
            documents=book.documents,
            n_queries=len(labeled.queries),
            excluded_no_relevant=labeled.excluded_no_relevant,
            unmatched_labels=labeled.unmatched_labels,
            unknown_queries=labeled.unknown_queries,
            unknown_docs=labeled.unknown_docs,
            empty_docs=labeled.empty_docs,
            excluded_query_ids=labeled.excluded_query_ids,
            unknown_query_ids=labeled.unknown_query_ids,
            unknown_doc_ids=labeled.unknown_doc_ids,
            empty_doc_ids=labeled.empty_doc_ids,
            spans_beyond_text=labeled.spans_beyond_text,
            grid=grid,
            metrics=self.metrics,
            knee_metric=knees.metric,
            gain_per_1k=gain,
            delta=knees.delta,
            epsilon=knees.epsilon,
            turns=turns,
            cache_factor=cache_factor,
            sizes=tuple(_eval.size_points(rows, grid, self.metrics)),
            curves=tuple(curves),
            recommended_configuration=best,
            recommended=knee,
            trade_offs=tuple(_eval.knee_trade_offs(chosen)),
            costs=tuple(_eval.cost_table(grid.budgets, knee.budget, turns, cache_factor)),
            uncached=tuple(_eval.cost_table(grid.budgets, knee.budget, turns, 1.0)),
            out=str(folder),
            files=(),
            computed=counts[0],
            reused=counts[1],
            seconds=round(counts[2], 2),
            stop_calibration=self.stop_calibration(),
        )

    def stop_calibration(self) -> str:
        """What the stop rules of the grid other than ``none`` calibrate with ("" if none)."""
        if all(stop == "none" for stop in self.book.grid.stops):
            return ""
        need = max(STOP_MIN_QUERIES, STOP_FOLDS)
        found = len(self.labeled.labels.evaluated())
        if found < need:
            return f"{UNCALIBRATED_RULE} ({found} labeled queries, fewer than {need} to calibrate)"
        return f"out of sample, {STOP_FOLDS} folds"

    def measure(self, results: Path, progress: bool) -> tuple[int, int]:
        """Measure what ``results`` lacks, appending rows per setting; (computed, reused)."""
        from tqdm import tqdm

        done = {(r.key, r.metric) for r in _eval.read_results(results)}
        plan = self.book.plan((*self.metrics, *_eval.CHUNK_STATS), done)
        pending = [(s, p) for s, p in plan.items() if p[0] or p[1]]
        computed = 0
        with tqdm(total=len(pending), desc="sweep", unit="setting", disable=not progress) as bar:
            chunked: tuple[tuple[str, int], list[Chunk]] | None = None
            for setting, (ranking, todo) in pending:
                if chunked is None or chunked[0] != setting[:2]:  # once per (chunker, size)
                    chunked = (setting[:2], self.chunks(setting[0], setting[1]))
                chunks = chunked[1]
                retriever = retriever_for(  # once per mode
                    chunks, setting[2], self.bm25, embedder=self.embedder
                )
                rows = self.ranking_rows(retriever, chunks, setting) if ranking else []
                if todo:
                    rows += self.budget_rows(retriever, chunks, setting, todo)
                _eval.append_results(results, rows)
                computed += int(ranking) + len(todo)
                bar.update(1)
        return computed, len(self.book.settings()) - computed


def run_sweep(
    corpus: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    *,
    qrels: str | os.PathLike[str] | None = None,
    spans: str | os.PathLike[str] | None = None,
    grid: SweepGrid | None = None,
    out: str | os.PathLike[str] | None = None,
    name: str | None = None,
    level: str = "doc",
    metrics: Sequence[str] | str = SWEEP_METRICS,
    epsilon: float = DEFAULT_EPSILON,
    turns: int = DEFAULT_TURNS,
    cache_factor: float = CACHED_FACTOR,
    knee_metric: str = DEFAULT_KNEE_METRIC,
    gain_per_1k: float = DEFAULT_GAIN_PER_1K,
    bm25: BM25Params | None = None,
    embedder: str | _embed.Embedder | None = None,
    plots: bool = True,
    progress: bool = False,
) -> SweepReport:
    """Sweep chunker × size × mode × packer × budget × stop on one labeled set; write a report.

    Each (chunker, size) is chunked once and each mode built once, in memory, and reused
    for every packer and budget. Rows already in ``out/results.jsonl`` with the same
    configuration key (settings plus the content hashes of corpus and labels) are reused,
    not measured again, so re-running with an extra grid value measures only what is new.
    The ``dense`` and ``hybrid`` modes (hybrid: bm25 and dense fused by plain RRF) embed
    through a vector cache in ``out/vectors``, by model and content hash: every chunk
    text and query is embedded once, across configurations and re-runs. Their keys hold
    the embedder's ``model_id``, so another embedder measures them again. Stop rules
    other than ``none`` (``grid.stops``) are keyed apart and calibrated out of sample
    (:func:`plan_stop`): each query's P(relevant) comes from a model fitted on the other
    folds' queries.

    Args:
        corpus: A folder, files, a BEIR ``corpus.jsonl`` or BEIR dataset folder.
        queries: BEIR ``queries.jsonl`` (with ``qrels`` or ``spans``) or lab JSONL.
        qrels: BEIR or TREC qrels. spans: Span labels JSONL.
        grid: The settings to cross (default ``SweepGrid()``).
        out: Results folder (default one per corpus under ``./.ctxselect/sweeps``).
        name: The dataset's name in the report (default: the corpus folder's name).
        level: ``doc`` (chunk rankings collapsed to documents) or ``chunk``.
        metrics: Ranking metrics (``name@k``); ``hit@1`` is the lab's top-1 correct.
        epsilon: Differences in the knee metric treated as ties between configurations.
        turns, cache_factor: The session's turns T and cache factor c (cost table, δ).
        knee_metric: Knees on ``recall`` (fraction of relevant documents selected) or
            ``hit`` (answer in context).
        gain_per_1k: Least gain per 1,000 tokens sent once; the knee's
            δ = gain_per_1k × (1 + (T − 1) × c) (see :mod:`ctxselect.eval.knee`).
        bm25: BM25 settings.
        embedder: The model of the dense modes: a registry name (``minilm``, ``hash``)
            or an embedder; needed when the grid has ``dense`` or ``hybrid``.
        plots: Draw PNG plots (needs ``ctxselect[plot]``).
        progress: Progress bars on stderr.

    Raises:
        UnknownNameError: A grid or embedder name is not registered.
        ConfigError: A setting is invalid, or a dense mode lacks an embedder.
        InputError: An input file is malformed.
        MissingExtraError: ``plots`` without matplotlib, or the embedder's extra, missing.
    """
    started = time.perf_counter()
    grid = check_grid(grid or SweepGrid())
    _eval.check_level(level)
    knees = _eval.KneeSettings(
        _eval.check_knee_metric(knee_metric),
        _eval.knee_delta(gain_per_1k, turns, cache_factor),  # validates turns, c, gain
        _eval.check_epsilon(epsilon),
    )
    ranking = _eval.ranking_metric_names(metrics)
    if plots:
        require("matplotlib.figure", extra="plot", feature="sweep plots")
    folder = Path(out or default_sweep_dir(corpus))
    _check_out(folder, corpus, queries, qrels, spans)
    vectors = _embed.FileVectorCache(folder / VECTORS_DIR)
    model = _modes.experiment_embedder(embedder, grid.modes, vectors, progress=progress)
    loaded = _ingest.load_paths([corpus], progress=progress)
    documents = loaded.documents
    if not documents:
        raise InputError(f"{corpus} holds no document to sweep")
    by_id = {d.doc_id: d for d in documents}
    labeled = _eval.load_labeled_set(
        queries, qrels, spans, by_id.keys(), lambda d: len(by_id[d].text)
    )
    labeled = with_empty_documents(labeled, corpus, by_id.keys(), loaded.report.empty)
    bm25 = bm25 or BM25Params()
    book = _eval.ResultBook(
        dataset=name or dataset_name(corpus),
        grid=grid,
        level=level,
        documents=len(documents),
        corpus_hash=_eval.corpus_hash(documents),
        labels_hash=labeled.content_hash(),
        extra={BM25_KEY: dataclasses.asdict(bm25)},
        modes_extra=_modes_extra(model),
    )
    folder.mkdir(parents=True, exist_ok=True)
    sweep = _Sweep(book, ranking, bm25, labeled, documents, model)
    computed, reused = sweep.measure(folder / _eval.RESULTS_FILE, progress)
    report = sweep.summarize(
        folder,
        (corpus, queries),
        (knees, gain_per_1k, turns, cache_factor),
        (computed, reused, time.perf_counter() - started),
    )
    images = {}
    if plots:
        images = _eval.sweep_plots(report.curves, report.sizes, ranking, book.dataset)
    return _eval.write_sweep_files(report, folder, images)


__all__ = [
    "CALIBRATION_DEPTH",
    "MemoCounter",
    "StopPlan",
    "measure_budgets",
    "no_recommendation",
    "plan_stop",
    "run_sweep",
    "selection_depth",
    "stopped_hits",
    "sweep_grid",
    "sweep_tables",
]


def sweep_tables(report: SweepReport) -> str:
    """The sweep's tables in the lab's layout (what ``tables.txt`` holds)."""
    return _eval.sweep_tables(report)


def no_recommendation(report: SweepReport) -> str:
    """Why the sweep recommends no budget ("" when it does): no selection at any swept
    budget holds a relevant document, so its knees are the smallest budget by default."""
    return _eval.no_recommendation(report)


def _check_out(folder: Path, corpus: _P, queries: _P, qrels: _P | None, spans: _P | None) -> None:
    """Refuse a results folder that is a file, or lies in the corpus or on an input.

    Raises:
        InputError: Naming the path and what to pass instead.
    """
    inputs = {"--corpus": corpus, "--queries": queries, "--qrels": qrels, "--spans": spans}
    _eval.check_not_input(folder, "--out", inputs, folder=True, walked=walks_every_file)
    if folder.exists() and not folder.is_dir():
        raise InputError(
            f"--out {folder} is a file: the sweep writes a results folder there "
            f"(results.jsonl, tables.txt, report.html); name a folder"
        )

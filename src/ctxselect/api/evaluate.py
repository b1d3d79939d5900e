"""The facade's measuring half: ``evaluate_corpus`` (``ctxselect eval``), ``run_lab``,
``compare_run_files`` (``ctxselect compare``) and ``session_cost`` (``ctxselect cost``).

Like :mod:`ctxselect.api`, this module composes stages (ingest, chunk, retrieve, budget,
eval); :mod:`ctxselect.api.sweep` holds the sweep and the budgeted-selection blocks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxselect import budget as _budget
from ctxselect import chunk as _chunk
from ctxselect import embed as _embed
from ctxselect import eval as _eval
from ctxselect import ingest as _ingest
from ctxselect import tokens as _tokens
from ctxselect.api import modes as _modes
from ctxselect.api.filters import make_filter
from ctxselect.api.modes import NO_EMBEDDER
from ctxselect.api.read import Index, open_index, retriever_for
from ctxselect.api.selections import (
    CALIBRATION_DEPTH,
    MemoCounter,
    measure_budgets,
    plan_stop,
    selection_depth,
)
from ctxselect.api.write import index_paths
from ctxselect.budget.stop import check_stop
from ctxselect.config import (
    DEFAULT_FORMAT,
    DEFAULT_INDEX_DIR,
    DEFAULT_MODE,
    DEFAULT_PACKER,
    LAB_MODE,
    BM25Params,
    ChunkSpec,
)
from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import Comparison, SessionCost, session_cost
from ctxselect.retrieve.base import Retriever
from ctxselect.types import Chunk, Document, Filter, Qrels

__all__ = [
    "Comparison",
    "EvalResult",
    "LabReport",
    "SessionCost",
    "compare_run_files",
    "default_eval_index",
    "evaluate_corpus",
    "ranked_documents",
    "run_lab",
    "session_cost",
]

DEFAULT_PERMUTATIONS = _eval.DEFAULT_PERMUTATIONS
DEFAULT_SEED = _eval.DEFAULT_SEED
LAB_SIZES = (400, 800, 1600, 3200, 6400, 12800)
LAB_BUDGETS = (500, 1000, 2000, 4000, 8000)
LAB_BUDGET_CHUNK_CHARS = 1600
LAB_PACKER = "greedy"  # the chapter fills greedily
LAB_TOKENIZER = "chars4"  # the chapter's estimate
DEFAULT_RUN_DEPTH = _eval.DEFAULT_RUN_DEPTH


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Metrics of one retrieval mode on a labeled corpus (``ctxselect eval``).

    ``metrics`` holds ranking metrics (``ndcg@10``) and, for each budget, the budget
    metrics (``recall@2000t``: fraction of relevant documents selected, ``hit@2000t``:
    answer in context, ``relevant-tokens@2000t``, ``tokens_used@2000t``, ``chunks@2000t``).
    ``embedder`` is the model id of the index's dense vectors ("" when it has none).
    ``stop`` is the stopping rule of the budgeted selections and ``calibration`` which
    P(relevant) it used (``out of sample, 5 folds``, ``stored in the index``,
    ``uncalibrated rule (...)``; "" for ``none``).
    ``filter`` is the ``--include``/``--exclude``/``--where`` filter every ranking was
    restricted to, as flags ("" for none); judgments are not filtered, so a relevant
    document the filter leaves out counts as missed.
    ``excluded_no_relevant`` counts queries left out because nothing judged for them is
    relevant; ``unknown_queries_in_qrels`` judged queries missing from
    the queries file (not asked); ``unknown_docs_in_qrels`` judgments of documents not in
    the corpus; ``spans_beyond_text`` span labels past their document's end.
    """

    corpus: str
    mode: str
    index: str
    metrics: dict[str, float]
    n_queries: int
    excluded_no_relevant: int
    missing_from_run: int
    unknown_docs_in_qrels: int | None
    documents: int
    chunks: int
    index_seconds: float
    search_seconds: float
    run_path: str = ""
    per_query: dict[str, dict[str, float]] | None = None
    level: str = "doc"
    label_kind: str = "documents"
    budgets: tuple[int, ...] = ()
    packer: str = ""
    unknown_queries_in_qrels: int = 0
    spans_beyond_text: int = 0
    per_query_path: str = ""
    embedder: str = ""
    depth: int = DEFAULT_RUN_DEPTH
    stop: str = "none"
    calibration: str = ""
    filter: str = ""


@dataclass(frozen=True, slots=True)
class LabReport:
    """The chapter's two experiments on one corpus (``ctxselect lab``).

    ``embedder`` is the model id that embedded chunks and queries for ``dense`` and
    ``hybrid`` ("" for the keyword modes).
    """

    corpus: str
    n_queries: int
    mode: str
    packer: str
    tokenizer: str
    budget_chunk_chars: int
    size_rows: tuple[_eval.SizeSweepRow, ...]
    budget_rows: tuple[_eval.BudgetRow, ...]
    unmatched_labels: tuple[str, ...] = ()
    embedder: str = ""


def default_eval_index(corpus: str | os.PathLike[str]) -> str:
    """An index folder per corpus under ``./.ctxselect/eval`` so re-runs reuse it."""
    resolved = str(Path(corpus).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    name = Path(resolved).parent.name if Path(resolved).is_file() else Path(resolved).name
    return os.path.join(DEFAULT_INDEX_DIR, "eval", f"{name}-{digest}")


def ranked_documents(
    index: Index,
    queries: Mapping[str, str],
    k: int,
    mode: str | None = None,
    filter: Filter | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Rank documents per query by their best chunk, ``k`` distinct documents deep.

    Chunks are fetched in growing depth until ``k`` distinct documents are found or the
    ranking runs out, so the document ranking is exact however documents are chunked.
    ``filter`` restricts the ranking as ``Index.search`` does.
    """
    where = _filter_args(filter)
    return _eval.rank_documents(
        lambda q, depth: index.search_many(q, depth, mode, **where), queries, k
    )


def _filter_args(filter: Filter | None) -> dict[str, Any]:
    """A filter as ``Index.search_many``'s keyword arguments."""
    if not filter:
        return {}
    return {"include": filter.include, "exclude": filter.exclude, "where": filter.where}


def evaluate_corpus(
    corpus: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    qrels: str | os.PathLike[str] | None = None,
    *,
    spans: str | os.PathLike[str] | None = None,
    mode: str = DEFAULT_MODE,
    metrics: Sequence[str] | str = ("ndcg@10", "recall@100"),
    budgets: Sequence[int] = (),
    level: str = "doc",
    packer: str = DEFAULT_PACKER,
    format: str = DEFAULT_FORMAT,
    index: str | os.PathLike[str] | None = None,
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
    run_out: str | os.PathLike[str] | None = None,
    per_query: bool = False,
    per_query_out: str | os.PathLike[str] | None = None,
    progress: bool = False,
    embedder: _embed.Embedder | str | None = None,
    depth: int | None = None,
    stop: str | float = "none",
    stored_calibration: bool = False,
    include: Sequence[str] | str | None = None,
    exclude: Sequence[str] | str | None = None,
    where: Sequence[str] | str | None = None,
) -> EvalResult:
    """Index ``corpus`` (or reuse its index), run every query, and score the run.

    At ``level="doc"`` chunk rankings collapse to document rankings by each document's
    best chunk; at ``"chunk"`` chunks are judged directly (a chunk is relevant when its
    document is, or when it overlaps a relevant span). Ranking metrics follow trec_eval's
    definitions (checked against pytrec_eval in the tests). For each budget the queries'
    selections are made as ``ctxselect select`` makes them and scored with the budget
    metrics (``recall@Bt``, ``hit@Bt`` ...); budget metrics named in ``metrics`` add their
    budgets.

    Args:
        corpus: A folder, files, or a BEIR ``corpus.jsonl``.
        queries: BEIR ``queries.jsonl`` (``_id``, ``text``), or lab JSONL with labels.
        qrels: BEIR qrels TSV or TREC qrels. spans: Span labels JSONL instead.
        mode: Retrieval mode.
        metrics: ``name@k`` ranking metrics and ``name@Bt`` budget metrics.
        budgets: Token budgets to select under; each adds every budget metric.
        level: ``doc`` or ``chunk``: what the ranking metrics judge.
        packer: Packer of the budgeted selections. format: Their framing.
        index: Index folder; default one per corpus under ``./.ctxselect/eval``.
        chunk: Chunking settings (default: the index's, else ``ChunkSpec()``).
        bm25: BM25 settings.
        run_out: Write the run (documents, or chunks at chunk level) in TREC format.
        per_query: Keep per-query values in the result.
        per_query_out: Write per-query values here, one JSON object per line.
        progress: Progress bars on stderr.
        embedder: Embed the chunks for the ``dense`` and ``hybrid`` modes: a name
            (``minilm``, ``hash``) or an embedder; default: the index's own, if any.
        depth: Documents (chunks at chunk level) retrieved per query, scored and written
            to ``run_out``; default 1000 (trec_eval's convention), or the largest metric
            ``k`` if deeper.
        stop: ``none`` (fill each budget, the default), ``auto`` or a P threshold.
        stored_calibration: Stop with the index's stored calibration, not an
            out-of-sample one.
        include: Gitignore globs over doc ids: rank only matching documents.
        exclude: Gitignore globs over doc ids: never rank matching documents.
        where: ``key=value`` conditions over stored metadata (``Index.search``).

    Raises:
        ConfigError: A metric, level, packer or format is invalid, ``depth`` is below
            the largest metric ``k``, or a mode needs an embedder and the index has none.
        InputError: An input file is malformed, or no query has a relevant document.
    """
    _eval.check_level(level)
    stop = check_stop(stop)
    filter = make_filter(include, exclude, where)
    ranking, budget_specs = _eval.split_metrics(metrics)
    wanted = sorted({*(int(b) for b in budgets), *(b.budget for b in budget_specs)})
    for value in wanted:
        _budget.check_budget(value)
    _budget.PACKERS.check(packer)
    _budget.FORMATS.check(format)
    depth = _eval.run_depth(depth, ranking)
    folder = os.fspath(index) if index else default_eval_index(corpus)
    if isinstance(embedder, str) and embedder != NO_EMBEDDER:
        embedder = _embed.make_embedder(embedder)  # one model for the chunks and the queries
    report = index_paths(
        [corpus], folder, chunk=chunk, bm25=bm25, progress=progress, embedder=embedder
    )
    with open_index(folder, embedder=None if isinstance(embedder, str) else embedder) as idx:
        _check_dense(idx, mode)
        doc_ids = set(idx.table.doc_ids)
        labeled = _eval.load_labeled_set(
            queries, qrels, spans, doc_ids, lambda d: len(idx.get_document(d).text)
        )
        started = time.perf_counter()
        run, judged = _ranked_run(idx, labeled, level, depth, mode, filter)
        search_seconds = time.perf_counter() - started
        # evaluate() needs one metric; with budget metrics alone, hit@1 is computed unused
        scored = _eval.evaluate(run, judged, [str(s) for s in ranking] or ["hit@1"])
        values = {q: {m: v[m] for m in map(str, ranking)} for q, v in scored.per_query.items()}
        calibration = ""
        if wanted:
            how = (stop, stored_calibration)
            calibration = _add_budget_values(
                values, idx, labeled, wanted, mode, (packer, format), how, filter
            )
    if run_out:
        _eval.write_trec_run(run_out, run, tag=f"ctxselect-{mode}", k=depth)
    if per_query_out:
        _write_per_query(per_query_out, values)
    means = {str(spec): scored.mean[str(spec)] for spec in ranking}
    for name in (n for b in wanted for n in _eval.budget_metric_names(b)):
        means[name] = sum(values[q][name] for q in labeled.queries) / len(labeled.queries)
    return EvalResult(
        corpus=os.fspath(corpus),
        mode=mode,
        index=folder,
        metrics=means,
        n_queries=scored.n_queries,
        excluded_no_relevant=labeled.excluded_no_relevant + scored.excluded_no_relevant,
        missing_from_run=scored.missing_from_run,
        unknown_docs_in_qrels=labeled.unknown_docs,
        documents=report.documents,
        chunks=report.chunks,
        index_seconds=report.seconds,
        search_seconds=round(search_seconds, 3),
        run_path=os.fspath(run_out) if run_out else "",
        per_query=values if per_query else None,
        level=level,
        label_kind=labeled.labels.kind,
        budgets=tuple(wanted),
        packer=packer if wanted else "",
        unknown_queries_in_qrels=labeled.unknown_queries,
        spans_beyond_text=labeled.spans_beyond_text,
        per_query_path=os.fspath(per_query_out) if per_query_out else "",
        embedder=idx.settings.embedder.model_id if idx.settings.embedder else "",
        depth=depth,
        stop=str(stop) if wanted else "none",
        calibration=calibration,
        filter=filter.describe(),
    )


def _check_dense(idx: Index, mode: str) -> None:
    """Fail early, naming the eval flag, when ``mode`` needs vectors the index lacks."""
    if mode in _modes.embedding_modes() and idx.settings.embedder is None:
        raise ConfigError(
            f"mode {mode} ranks by dense vectors and index {idx.path} has none: add "
            f"--embedder minilm (or hash, a model-free stand-in) to `ctxselect eval`"
        )


def _ranked_run(
    idx: Index,
    labeled: _eval.LabeledSet,
    level: str,
    depth: int,
    mode: str | None,
    filter: Filter | None = None,
) -> tuple[dict[str, dict[str, float]], Qrels]:
    """The run to score and the judgments it is scored on, at document or chunk level."""
    if level == "doc":
        ranked = ranked_documents(idx, labeled.queries, depth, mode, filter)
        return _eval.collapse_to_docs(ranked), labeled.labels.qrels
    hits = idx.search_many(labeled.queries, depth, mode, **_filter_args(filter))
    run = {qid: {h.chunk_id: h.score for h in ranked} for qid, ranked in hits.items()}
    table = idx.table
    judged = labeled.labels.chunk_qrels(table.chunk_ids, table.doc_ids, table.starts, table.ends)
    return run, judged


def _add_budget_values(
    values: dict[str, dict[str, float]],
    idx: Index,
    labeled: _eval.LabeledSet,
    budgets: Sequence[int],
    mode: str | None,
    framing: tuple[str, str],
    how: tuple[str | float, bool],
    filter: Filter | None = None,
) -> str:
    """Select under each budget as ``Index.select`` does; add the budget metrics per query.

    Returns what calibration the stopping rule used ("" for ``none``).
    """
    n_tokens = idx.table.n_tokens
    (packer, format), (stop, use_stored) = framing, how
    depth = max(selection_depth(max(budgets), n_tokens), CALIBRATION_DEPTH)
    hits = idx.search_many(labeled.queries, depth, mode, **_filter_args(filter))
    plan = plan_stop(
        stop,
        hits,
        labeled.labels,
        sum(n_tokens) / max(1, len(n_tokens)),
        stored=idx.calibration(mode),
        use_stored=use_stored,
    )
    measured = measure_budgets(
        hits,
        labeled.labels,
        [(packer, b) for b in budgets],
        counter=MemoCounter(idx.chunk_spec.tokenizer),
        n_tokens=n_tokens,
        span_text=idx.store.span_text,
        format=format,
        stop=plan,
    )
    for per_query in measured.values():
        for qid, scores in per_query.items():
            values.setdefault(qid, {}).update(scores)
    return plan.calibration


def _write_per_query(
    path: str | os.PathLike[str], values: Mapping[str, Mapping[str, float]]
) -> None:
    lines = [json.dumps({"qid": qid, **values[qid]}) + "\n" for qid in sorted(values)]
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)


def run_lab(
    corpus: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    *,
    sizes: Sequence[int] = LAB_SIZES,
    budgets: Sequence[int] = LAB_BUDGETS,
    budget_chunk_chars: int = LAB_BUDGET_CHUNK_CHARS,
    mode: str = LAB_MODE,
    packer: str = LAB_PACKER,
    tokenizer: str = LAB_TOKENIZER,
    embedder: _embed.Embedder | str | None = None,
) -> LabReport:
    """Reproduce the chapter's chunk-size sweep and budget table on a labeled corpus.

    Chunks are ``paragraph`` chunks of each size in characters; a query counts as
    answered when a chunk of its labeled document is ranked first (size sweep) or is
    inside the selection (budget table). Budgets count tokens in ``tokenizer``, framing
    included, as ``ctxselect select`` does. The ``dense`` and ``hybrid`` modes (hybrid:
    bm25 and dense fused by plain RRF) need ``embedder``, a name (``minilm``, ``hash``)
    or a model; each distinct chunk text and query is embedded once, in memory.

    Raises:
        ConfigError: A dense mode without an embedder. InputError: No labeled query.
        UnknownNameError: The embedder name is not registered.
    """
    model = _modes.experiment_embedder(embedder, [mode], _embed.MemoryVectorCache(), command="lab")
    labeled = _eval.read_labeled(queries)
    if not labeled:
        raise InputError(f"{queries}: no labeled queries; expected lines like "
                         '{"query": "...", "label": "02"}')  # fmt: skip
    documents = _ingest.load_paths([corpus]).documents
    doc_ids = [d.doc_id for d in documents]
    unmatched = tuple(q.label for q in _eval.unmatched_labels(labeled, doc_ids))
    size_rows = []
    for size in sizes:
        chunks = _paragraph_chunks(documents, size, tokenizer)
        retriever = retriever_for(chunks, mode, embedder=model)
        tops = [retriever.search(q.query, 3) for q in labeled]
        correct = sum(1 for q, hits in zip(labeled, tops, strict=True)
                      if hits and _eval.label_matches(q.label, hits[0].doc_id))  # fmt: skip
        size_rows.append(
            _eval.size_sweep_row(
                size,
                [len(c.text) for c in chunks],
                correct,
                len(labeled),
                top3_lengths=[[len(h.text) for h in hits] for hits in tops],
            )
        )
    chunks = _paragraph_chunks(documents, budget_chunk_chars, tokenizer)
    retriever = retriever_for(chunks, mode, embedder=model)
    budget_rows = _budget_rows(retriever, labeled, budgets, packer, tokenizer)
    return LabReport(
        corpus=os.fspath(corpus),
        n_queries=len(labeled),
        mode=mode,
        packer=packer,
        tokenizer=tokenizer,
        budget_chunk_chars=budget_chunk_chars,
        size_rows=tuple(size_rows),
        budget_rows=budget_rows,
        unmatched_labels=unmatched,
        embedder=model.model_id if model is not None else "",
    )


def _paragraph_chunks(documents: Sequence[Document], size: int, tokenizer: str) -> list[Chunk]:
    chunker = _chunk.make_chunker(ChunkSpec(chunker="paragraph", size=size, tokenizer=tokenizer))
    return [c for doc in documents for c in chunker.chunk(doc)]


def _budget_rows(
    retriever: Retriever,
    labeled: Sequence[_eval.LabeledQuery],
    budgets: Sequence[int],
    packer: str,
    tokenizer: str,
) -> tuple[_eval.BudgetRow, ...]:
    fill = _budget.make_packer(packer, _tokens.get_counter(tokenizer))
    ranked = [retriever.search(q.query, 200) for q in labeled]
    rows = []
    for budget in budgets:
        answered, pieces = 0, 0
        for q, hits in zip(labeled, ranked, strict=True):
            selection = fill.pack(hits, budget)
            pieces += sum(len(piece.chunk_ids) for piece in selection.chunks)
            if any(_eval.label_matches(q.label, piece.doc_id) for piece in selection.chunks):
                answered += 1
        rows.append(_eval.BudgetRow(budget, answered, len(labeled), pieces / len(labeled)))
    return tuple(rows)


def compare_run_files(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    qrels: str | os.PathLike[str],
    *,
    metrics: Sequence[str] | str = _eval.DEFAULT_METRICS,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare two TREC runs per metric: paired differences and a randomization test.

    Raises:
        ConfigError: A metric is invalid or is a budget metric (runs hold rankings, not
            selections), or ``permutations`` < 1.
        InputError: A file is malformed, or the runs share no query with the qrels.
    """
    ranking, budget_specs = _eval.split_metrics(metrics)
    if budget_specs:
        raise ConfigError(
            f"{budget_specs[0]} is a budget metric, and TREC runs hold rankings, not "
            "selections: compare ranking metrics (ndcg@10, recall@100, ...), or measure "
            "budgets with `ctxselect eval --budgets` or `ctxselect sweep`"
        )
    result = _eval.compare_runs(
        _eval.read_trec_run(run_a),
        _eval.read_trec_run(run_b),
        _eval.load_qrels(qrels),
        [str(spec) for spec in ranking],
        permutations=permutations,
        seed=seed,
    )
    return dataclasses.replace(result, run_a=os.fspath(run_a), run_b=os.fspath(run_b))

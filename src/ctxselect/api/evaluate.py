"""The facade's measuring half: ``evaluate_corpus`` (``ctxselect eval``), ``run_lab``,
``compare_run_files`` (``ctxselect compare``) and ``session_cost`` (``ctxselect cost``).

Like :mod:`ctxselect.api`, this module composes stages (ingest, chunk, retrieve, budget,
eval); :mod:`ctxselect.api.eval_scoring` holds the blocks ``evaluate_corpus`` scores with,
:mod:`ctxselect.api.lab` the lab and :mod:`ctxselect.api.compare` ``compare_run_files``
(both re-exported here), and :mod:`ctxselect.api.sweep` the sweep.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxselect import embed as _embed
from ctxselect import eval as _eval
from ctxselect.api import modes as _modes
from ctxselect.api.compare import compare_run_files
from ctxselect.api.eval_scoring import (
    plan_eval,
    ranked_documents,
    score_labeled,
    with_empty_documents,
)
from ctxselect.api.lab import (
    LAB_BUDGET_CHUNK_CHARS,
    LAB_BUDGETS,
    LAB_MODE,
    LAB_PACKER,
    LAB_SIZES,
    LAB_TOKENIZER,
    LabReport,
    run_lab,
)
from ctxselect.api.modes import NO_EMBEDDER
from ctxselect.api.read import Index, open_index
from ctxselect.api.write import index_paths
from ctxselect.config import (
    DEFAULT_FORMAT,
    DEFAULT_INDEX_DIR,
    DEFAULT_MODE,
    DEFAULT_PACKER,
    BM25Params,
    ChunkSpec,
)
from ctxselect.errors import ConfigError, IndexNotFoundError
from ctxselect.eval import Comparison, SessionCost, render_table, session_cost
from ctxselect.ingest.walk import walks_every_file

__all__ = [
    "LAB_BUDGETS",
    "LAB_BUDGET_CHUNK_CHARS",
    "LAB_MODE",
    "LAB_PACKER",
    "LAB_SIZES",
    "LAB_TOKENIZER",
    "Comparison",
    "EvalResult",
    "LabReport",
    "SessionCost",
    "compare_run_files",
    "default_eval_index",
    "evaluate_corpus",
    "ranked_documents",
    "render_table",
    "run_lab",
    "session_cost",
]

DEFAULT_PERMUTATIONS = _eval.DEFAULT_PERMUTATIONS
DEFAULT_SEED = _eval.DEFAULT_SEED
DEFAULT_RUN_DEPTH = _eval.DEFAULT_RUN_DEPTH
_Path = str | os.PathLike[str]


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
    ``chunker``, ``size``, ``overlap`` and ``tokenizer`` are the chunk settings of the
    index that was measured (as ``ctxselect index`` takes them). ``unmatched_labels``
    names the lab labels (``{"query", "label"}`` queries) matching no document: their
    queries are among ``excluded_no_relevant``. ``empty_docs_in_qrels`` counts
    judgments of documents the corpus holds without text (skipped, never indexed; not
    in ``unknown_docs_in_qrels``). ``unknown_query_ids``, ``unknown_doc_ids`` and
    ``empty_doc_ids`` name them: the query ids, and the distinct document ids, sorted.
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
    chunker: str = ""
    size: int = 0
    overlap: int = 0
    tokenizer: str = ""
    unmatched_labels: tuple[str, ...] = ()
    empty_docs_in_qrels: int = 0
    unknown_query_ids: tuple[str, ...] = ()
    unknown_doc_ids: tuple[str, ...] = ()
    empty_doc_ids: tuple[str, ...] = ()


def default_eval_index(
    corpus: str | os.PathLike[str],
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
) -> str:
    """An index folder per corpus and settings under ``./.ctxselect/eval``, reused on re-runs.

    The folder is keyed by the corpus path and the chunking and BM25 settings (default:
    ``ChunkSpec()``, ``BM25Params()``), so an ``eval`` with other chunking flags never
    leaves its chunks behind for the next one without flags.
    """
    resolved = str(Path(corpus).resolve())
    spec, params = chunk or ChunkSpec(), bm25 or BM25Params()
    key = "\t".join(map(str, (resolved, *dataclasses.astuple(spec), *dataclasses.astuple(params))))
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    name = Path(resolved).parent.name if Path(resolved).is_file() else Path(resolved).name
    return os.path.join(DEFAULT_INDEX_DIR, "eval", f"{name}-{spec.chunker}-{spec.size}-{digest}")


def _check_same_corpus(folder: str, corpus: str | os.PathLike[str]) -> None:
    """Refuse to evaluate ``corpus`` in an index built from other roots: indexing the
    corpus there would remove every document the index holds (a project's index, say).

    Raises:
        ConfigError: The index exists and records other roots.
    """
    try:
        with open_index(folder) as idx:
            roots = list(idx.settings.roots)
            documents = idx.store.counts()["documents"]
    except IndexNotFoundError:
        return  # a new index: the corpus becomes its roots
    if not roots or roots == [str(Path(corpus).resolve())]:
        return
    shown = roots[0] + (f" and {len(roots) - 1} more" if len(roots) > 1 else "")
    raise ConfigError(
        f"index {folder} holds {documents:,} documents from {shown}: evaluating "
        f"--corpus {os.fspath(corpus)} there would re-index it from that corpus and remove "
        f"them: leave out --index (each corpus gets its own index under .ctxselect/eval) "
        f"or name a new folder; to replace the index's roots on purpose, run "
        f"`ctxselect index {os.fspath(corpus)} --index {folder}` first"
    )


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
    plan = plan_eval(
        mode, metrics, budgets, level=level, packer=packer, format=format, depth=depth,
        stop=stop, stored_calibration=stored_calibration,
        include=include, exclude=exclude, where=where,
    )  # fmt: skip
    inputs = {"--corpus": corpus, "--queries": queries, "--qrels": qrels, "--spans": spans}
    if run_out:
        _eval.prepare_output(run_out, "--run-out", inputs, walked=walks_every_file)
    if per_query_out:  # nor over the run
        others = {**inputs, "--run-out": run_out}
        _eval.prepare_output(
            per_query_out, "--per-query", others, "per_query.jsonl", walked=walks_every_file
        )
    if not index:  # the default index is built with the defaults, never a past run's flags
        chunk, bm25 = chunk or ChunkSpec(), bm25 or BM25Params()
    folder = os.fspath(index) if index else default_eval_index(corpus, chunk, bm25)
    if index:
        _check_same_corpus(folder, corpus)
    if isinstance(embedder, str) and embedder != NO_EMBEDDER:
        embedder = _embed.make_embedder(embedder)  # one model for the chunks and the queries
    report = index_paths(
        [corpus], folder, chunk=chunk, bm25=bm25, progress=progress, embedder=embedder
    )
    with open_index(folder, embedder=None if isinstance(embedder, str) else embedder) as idx:
        _check_dense(idx, mode)
        labeled = _labeled_set(idx, corpus, (queries, qrels, spans), report.skipped)
        if run_out:  # before the ranking, not after it: a TREC run cannot hold these ids
            _check_run_ids(labeled.queries, () if plan.filter else idx.table.doc_ids, run_out)
        scores = score_labeled(idx, labeled, plan)
    if run_out:
        _eval.write_trec_run(run_out, scores.run, tag=f"ctxselect-{mode}", k=plan.depth)
    if per_query_out:
        _write_per_query(per_query_out, scores.per_query)
    return EvalResult(
        corpus=os.fspath(corpus),
        mode=mode,
        index=folder,
        metrics=scores.means,
        n_queries=scores.n_queries,
        excluded_no_relevant=labeled.excluded_no_relevant + scores.excluded_no_relevant,
        missing_from_run=scores.missing_from_run,
        unknown_docs_in_qrels=labeled.unknown_docs,
        documents=report.documents,
        chunks=report.chunks,
        index_seconds=report.seconds,
        search_seconds=scores.search_seconds,
        run_path=os.fspath(run_out) if run_out else "",
        per_query=scores.per_query if per_query else None,
        level=level,
        label_kind=labeled.labels.kind,
        budgets=plan.budgets,
        packer=packer if plan.budgets else "",
        unknown_queries_in_qrels=labeled.unknown_queries,
        spans_beyond_text=labeled.spans_beyond_text,
        per_query_path=os.fspath(per_query_out) if per_query_out else "",
        embedder=idx.settings.embedder.model_id if idx.settings.embedder else "",
        depth=plan.depth,
        stop=str(plan.stop) if plan.budgets else "none",
        calibration=scores.calibration,
        filter=plan.filter.describe(),
        chunker=idx.chunk_spec.chunker,
        size=idx.chunk_spec.size,
        overlap=idx.chunk_spec.overlap,
        tokenizer=idx.chunk_spec.tokenizer,
        unmatched_labels=labeled.unmatched_labels,
        empty_docs_in_qrels=labeled.empty_docs,
        unknown_query_ids=labeled.unknown_query_ids,
        unknown_doc_ids=labeled.unknown_doc_ids,
        empty_doc_ids=labeled.empty_doc_ids,
    )


def _labeled_set(
    idx: Index,
    corpus: str | os.PathLike[str],
    files: tuple[_Path, _Path | None, _Path | None],
    skipped: Mapping[str, int],
) -> _eval.LabeledSet:
    """Read the queries and labels (``files``: queries, qrels, spans) against the index.

    Judgments of documents ingest skipped as empty are told apart from unknown ones.
    """
    doc_ids = set(idx.table.doc_ids)
    labeled = _eval.load_labeled_set(*files, doc_ids, lambda d: len(idx.get_document(d).text))
    return with_empty_documents(labeled, corpus, doc_ids, skipped.get("empty", 0))


def _check_run_ids(qids: Collection[str], doc_ids: Sequence[str], run_out: _Path) -> None:
    """Refuse ``--run-out`` up front when a query or document id holds whitespace, which
    a whitespace-separated TREC run cannot hold."""
    for what, ids in (("query", qids), ("document", doc_ids)):
        spaced = sorted({i for i in ids if not i or any(ch.isspace() for ch in i)})
        if spaced:
            raise ConfigError(
                f"cannot write the TREC run {os.fspath(run_out)}: {len(spaced)} {what} ids "
                f"hold whitespace (e.g. {spaced[0]!r}), and TREC runs separate fields by "
                f"whitespace: rename those {what} ids, or leave --run-out out (--per-query "
                "writes JSON lines, which can hold any id)"
            )


def _check_dense(idx: Index, mode: str) -> None:
    """Fail early, naming the eval flag, when ``mode`` needs vectors the index lacks."""
    if mode in _modes.embedding_modes() and idx.settings.embedder is None:
        raise ConfigError(
            f"mode {mode} ranks by dense vectors and index {idx.path} has none: add "
            f"--embedder minilm (or hash, a model-free stand-in) to `ctxselect eval`"
        )


def _write_per_query(
    path: str | os.PathLike[str], values: Mapping[str, Mapping[str, float]]
) -> None:
    lines = [json.dumps({"qid": qid, **values[qid]}) + "\n" for qid in sorted(values)]
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)

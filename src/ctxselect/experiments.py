"""The facade's measuring half: ``evaluate_corpus`` (``ctxselect eval``) and ``run_lab``.

Like :mod:`ctxselect.api`, this module composes stages (ingest, chunk, retrieve, budget,
eval); nothing else does.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxselect import budget as _budget
from ctxselect import chunk as _chunk
from ctxselect import eval as _eval
from ctxselect import ingest as _ingest
from ctxselect import tokens as _tokens
from ctxselect.api import Index, index_paths, open_index, retriever_for
from ctxselect.config import DEFAULT_INDEX_DIR, DEFAULT_MODE, BM25Params, ChunkSpec
from ctxselect.errors import InputError
from ctxselect.retrieve.base import Retriever
from ctxselect.types import Chunk, Document, Hit

LAB_SIZES = (400, 800, 1600, 3200, 6400, 12800)
LAB_BUDGETS = (500, 1000, 2000, 4000, 8000)
LAB_BUDGET_CHUNK_CHARS = 1600
LAB_MODE = "tfidf"  # the chapter's scorer
LAB_PACKER = "greedy"  # the chapter fills greedily
LAB_TOKENIZER = "chars4"  # the chapter's estimate


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Metrics of one retrieval mode on a labeled corpus (``ctxselect eval``)."""

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


@dataclass(frozen=True, slots=True)
class LabReport:
    """The chapter's two experiments on one corpus (``ctxselect lab``)."""

    corpus: str
    n_queries: int
    mode: str
    packer: str
    tokenizer: str
    budget_chunk_chars: int
    size_rows: tuple[_eval.SizeSweepRow, ...]
    budget_rows: tuple[_eval.BudgetRow, ...]
    unmatched_labels: tuple[str, ...] = ()


def default_eval_index(corpus: str | os.PathLike[str]) -> str:
    """An index folder per corpus under ``./.ctxselect/eval`` so re-runs reuse it."""
    resolved = str(Path(corpus).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    name = Path(resolved).parent.name if Path(resolved).is_file() else Path(resolved).name
    return os.path.join(DEFAULT_INDEX_DIR, "eval", f"{name}-{digest}")


def ranked_documents(
    index: Index, queries: Mapping[str, str], k: int, mode: str | None = None
) -> dict[str, list[tuple[str, float]]]:
    """Rank documents per query by their best chunk, ``k`` distinct documents deep.

    Chunks are fetched in growing depth until ``k`` distinct documents are found or the
    ranking runs out, so the document ranking is exact however documents are chunked.
    """
    out: dict[str, list[tuple[str, float]]] = {}
    pending = dict(queries)
    depth = 2 * k
    while pending:
        hits = index.search_many(pending, depth, mode)
        for qid, ranked in hits.items():
            docs = _best_per_doc(ranked)
            if len(docs) >= k or len(ranked) < depth:
                out[qid] = docs[:k]
                del pending[qid]
        depth *= 4
    return out


def _best_per_doc(hits: Sequence[Hit]) -> list[tuple[str, float]]:
    seen: dict[str, float] = {}
    for hit in hits:
        seen.setdefault(hit.doc_id, hit.score)
    return list(seen.items())


def evaluate_corpus(
    corpus: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    qrels: str | os.PathLike[str],
    *,
    mode: str = DEFAULT_MODE,
    metrics: Sequence[str] | str = ("ndcg@10", "recall@100"),
    index: str | os.PathLike[str] | None = None,
    chunk: ChunkSpec | None = None,
    bm25: BM25Params | None = None,
    run_out: str | os.PathLike[str] | None = None,
    per_query: bool = False,
    progress: bool = False,
) -> EvalResult:
    """Index ``corpus`` (or reuse its index), run every query, and score the document run.

    Chunk rankings collapse to document rankings by each document's best chunk. Metric
    values follow trec_eval's definitions (checked against pytrec_eval in the tests).

    Args:
        corpus: A folder, files, or a BEIR ``corpus.jsonl``.
        queries: BEIR ``queries.jsonl`` (``_id``, ``text``).
        qrels: BEIR qrels TSV or TREC qrels.
        mode: Retrieval mode.
        metrics: ``name@k`` metric names.
        index: Index folder; default one per corpus under ``./.ctxselect/eval``.
        chunk: Chunking settings (default: the index's, else ``ChunkSpec()``).
        bm25: BM25 settings.
        run_out: Write the document run here in TREC format.
        per_query: Keep per-query values in the result.
        progress: Progress bars on stderr.
    """
    specs = _eval.parse_metrics(metrics)
    depth = max(spec.k for spec in specs)
    query_texts = _eval.read_queries(queries)
    judged = _eval.load_qrels(qrels)
    folder = os.fspath(index) if index else default_eval_index(corpus)
    report = index_paths([corpus], folder, chunk=chunk, bm25=bm25, progress=progress)
    with open_index(folder) as idx:
        started = time.perf_counter()
        ranked = ranked_documents(idx, query_texts, depth, mode)
        search_seconds = time.perf_counter() - started
        doc_ids = set(idx.table.doc_ids)
    run = _eval.collapse_to_docs(ranked)
    if run_out:
        _eval.write_trec_run(run_out, run, tag=f"ctxselect-{mode}", k=depth)
    scored = _eval.evaluate(run, judged, [str(s) for s in specs], doc_ids=doc_ids)
    return EvalResult(
        corpus=os.fspath(corpus),
        mode=mode,
        index=folder,
        metrics=scored.mean,
        n_queries=scored.n_queries,
        excluded_no_relevant=scored.excluded_no_relevant,
        missing_from_run=scored.missing_from_run,
        unknown_docs_in_qrels=scored.unknown_docs_in_qrels,
        documents=report.documents,
        chunks=report.chunks,
        index_seconds=report.seconds,
        search_seconds=round(search_seconds, 3),
        run_path=os.fspath(run_out) if run_out else "",
        per_query=scored.per_query if per_query else None,
    )


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
) -> LabReport:
    """Reproduce the chapter's chunk-size sweep and budget table on a labeled corpus.

    Chunks are ``paragraph`` chunks of each size in characters; a query counts as
    answered when a chunk of its labeled document is ranked first (size sweep) or is
    inside the selection (budget table). Budgets count tokens in ``tokenizer``, framing
    included, as ``ctxselect select`` does.
    """
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
        retriever = retriever_for(chunks, mode)
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
    budget_rows = _budget_rows(retriever_for(chunks, mode), labeled, budgets, packer, tokenizer)
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

"""The chapter's two experiments on a labeled corpus: ``run_lab`` (``ctxselect lab``).

A chunk-size sweep (is a chunk of the labeled document ranked first?) and a budget
table (is one inside the selection?), over ``paragraph`` chunks made in memory: nothing
is indexed. :mod:`ctxselect.api.evaluate` re-exports these names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxselect import budget as _budget
from ctxselect import chunk as _chunk
from ctxselect import embed as _embed
from ctxselect import eval as _eval
from ctxselect import ingest as _ingest
from ctxselect import tokens as _tokens
from ctxselect.api import modes as _modes
from ctxselect.api.read import retriever_for
from ctxselect.api.selections import selection_depth
from ctxselect.config import LAB_MODE, ChunkSpec, check_budget_range
from ctxselect.errors import InputError
from ctxselect.retrieve.base import Retriever
from ctxselect.types import Chunk, Document

LAB_SIZES = (400, 800, 1600, 3200, 6400, 12800)
LAB_BUDGETS = (500, 1000, 2000, 4000, 8000)
LAB_BUDGET_CHUNK_CHARS = 1600
LAB_PACKER = "greedy"  # the chapter fills greedily
LAB_TOKENIZER = "chars4"  # the chapter's estimate


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
    included, and are filled as ``ctxselect select`` fills them (ranked as deep as the
    budget needs, neighbours merged), so the table agrees with ``sweep``. The ``dense``
    and ``hybrid`` modes (hybrid: bm25 and dense fused by plain RRF) need ``embedder``, a
    name (``minilm``, ``hash``) or a model; each distinct chunk text and query is
    embedded once, in memory.

    Raises:
        ConfigError: A dense mode without an embedder, or a budget out of ``select``'s
            range. InputError: No labeled query.
        UnknownNameError: The embedder name is not registered.
    """
    for budget in budgets:
        check_budget_range(budget)  # select's range and words
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
    texts = {doc.doc_id: doc.text for doc in documents}
    budget_rows = _budget_rows(retriever, labeled, budgets, packer, tokenizer, chunks, texts)
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
    chunks: Sequence[Chunk],
    texts: Mapping[str, str],
) -> tuple[_eval.BudgetRow, ...]:
    """Pack each budget as ``select``, ``eval`` and ``sweep`` do.

    As deep a ranking (:func:`selection_depth`), and neighbours merged into the document
    text between them, so the table agrees with ``sweep`` on the same chunks.
    """
    fill = _budget.make_packer(
        packer, _tokens.get_counter(tokenizer), span_text=lambda d, s, e: texts[d][s:e]
    )
    n_tokens = [c.n_tokens for c in chunks]
    depths = {budget: selection_depth(budget, n_tokens) for budget in budgets}
    deepest = max(depths.values(), default=1)
    ranked = [retriever.search(q.query, deepest) for q in labeled]
    rows = []
    for budget in budgets:
        answered, pieces = 0, 0
        for q, hits in zip(labeled, ranked, strict=True):
            selection = fill.pack(hits[: depths[budget]], budget)
            pieces += sum(len(piece.chunk_ids) for piece in selection.chunks)
            if any(_eval.label_matches(q.label, piece.doc_id) for piece in selection.chunks):
                answered += 1
        rows.append(_eval.BudgetRow(budget, answered, len(labeled), pieces / len(labeled)))
    return tuple(rows)

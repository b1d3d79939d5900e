"""Metrics of a token-budgeted selection: did the answer make it into the context?

A selection is judged against qrels like a run is (see :mod:`.evaluate`): only queries
with a relevant document count, and a counted query with no selection scores 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctxselect.errors import InputError
from ctxselect.eval.metrics import RELEVANT, n_relevant
from ctxselect.types import Qrels


def _evaluated(qrels: Qrels) -> list[str]:
    qids = sorted(qid for qid, judged in qrels.items() if n_relevant(judged) > 0)
    if not qids:
        raise InputError("no qrels query has a relevant document (grade >= 1): nothing to measure")
    return qids


def answered_queries(selected: Mapping[str, Sequence[str]], qrels: Qrels) -> list[str]:
    """Return the evaluated queries whose selection holds a relevant document, sorted.

    Args:
        selected: qid -> doc ids of the chunks selected for it (repeats allowed).
        qrels: qid -> {doc_id: grade}.
    """
    return [
        qid
        for qid in _evaluated(qrels)
        if any(qrels[qid].get(doc_id, 0) >= RELEVANT for doc_id in selected.get(qid, ()))
    ]


def recall_at_budget(selected: Mapping[str, Sequence[str]], qrels: Qrels) -> float:
    """Return the share of queries with a relevant document inside their selection.

    This is ``recall@<budget>t`` in the metric language: the selection already fits
    the budget, so only whether the answer is in it is measured.

    Raises:
        InputError: No qrels query has a relevant document.
    """
    return len(answered_queries(selected, qrels)) / len(_evaluated(qrels))


def relevant_tokens_share(selected: Mapping[str, Sequence[tuple[str, int]]], qrels: Qrels) -> float:
    """Return the mean share of selected tokens that come from relevant documents.

    Args:
        selected: qid -> ``(doc_id, tokens)`` of every selected chunk.
        qrels: qid -> {doc_id: grade}.

    Returns:
        The mean over evaluated queries of relevant tokens / selected tokens; a query
        with nothing selected scores 0. 1.0 means no token was spent off-answer.

    Raises:
        InputError: No qrels query has a relevant document, or a token count is < 0.
    """
    qids = _evaluated(qrels)
    total = 0.0
    for qid in qids:
        pieces = selected.get(qid, ())
        if any(tokens < 0 for _, tokens in pieces):
            raise InputError(f"selection of query {qid!r} has a negative token count")
        used = sum(tokens for _, tokens in pieces)
        relevant = sum(t for d, t in pieces if qrels[qid].get(d, 0) >= RELEVANT)
        total += relevant / used if used else 0.0
    return total / len(qids)

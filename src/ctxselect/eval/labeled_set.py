"""One labeled set: the queries to ask and what is relevant for them, from any label file.

Three inputs are accepted: BEIR ``queries.jsonl`` with qrels (BEIR TSV or TREC), BEIR
queries with span labels, or the lab's JSONL whose ``label`` names the relevant documents.
What the inputs get wrong is counted, never silently dropped: judged queries missing from
the queries file, judgments naming documents not in the corpus, spans past the end of
their document, and queries without a judged-relevant document (left out, as trec_eval
leaves them out of its means).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.evaluate import count_unknown_docs
from ctxselect.eval.lab import labels_to_qrels
from ctxselect.eval.labels import Labels, read_spans
from ctxselect.eval.qrels_io import load_qrels
from ctxselect.eval.queries_io import is_labeled_file, read_labeled, read_queries
from ctxselect.eval.results import labels_hash

PathLike = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class LabeledSet:
    """Queries and what is relevant for them, with what the inputs got wrong, counted.

    Attributes:
        queries: qid -> text of the queries to ask: those with a relevant document.
        labels: Document or span labels, restricted to queries of the queries file.
        labels_file: The qrels or span file ("" when the queries file carries labels).
        excluded_no_relevant: Queries of the file left out: nothing judged relevant.
        unknown_queries: Judged query ids that the queries file lacks (not asked).
        unknown_docs: Judgments (query, document) naming documents not in the corpus.
        spans_beyond_text: Span labels that end past their document's text.
        span_lines: Canonical text of the span labels (for the content hash).
    """

    queries: dict[str, str]
    labels: Labels
    labels_file: str
    excluded_no_relevant: int
    unknown_queries: int
    unknown_docs: int
    spans_beyond_text: int
    span_lines: tuple[str, ...] = ()

    def content_hash(self) -> str:
        """Hash of the query texts and labels, so results are keyed by what judged them."""
        return labels_hash(self.queries, self.labels.qrels, self.span_lines)


def _read_labels(
    queries: PathLike, qrels: PathLike | None, spans: PathLike | None, doc_ids: Collection[str]
) -> tuple[dict[str, str], Labels, tuple[str, ...]]:
    if qrels is not None and spans is not None:
        raise ConfigError("give either qrels or span labels, not both: they are two labelings")
    if is_labeled_file(queries):
        if qrels is not None or spans is not None:
            raise ConfigError(
                f"{queries} is lab JSONL whose labels name the relevant documents: drop "
                "the qrels or span file, or pass BEIR queries.jsonl with it"
            )
        items = read_labeled(queries)
        texts = {item.qid: item.query for item in items}
        return texts, Labels.from_qrels(labels_to_qrels(items, doc_ids)), ()
    if spans is not None:
        span_list = read_spans(spans)
        lines = tuple(f"s\t{s.qid}\t{s.doc_id}\t{s.start}\t{s.end}\t{s.grade}" for s in span_list)
        return read_queries(queries), Labels.from_spans(span_list), lines
    if qrels is not None:
        return read_queries(queries), Labels.from_qrels(load_qrels(qrels)), ()
    raise ConfigError(
        f"{queries} holds no labels: pass a qrels file or span labels with it, or lab "
        'JSONL ({"query", "label"})'
    )


def load_labeled_set(
    queries: PathLike,
    qrels: PathLike | None,
    spans: PathLike | None,
    doc_ids: Collection[str],
    doc_length: Callable[[str], int],
) -> LabeledSet:
    """Read queries and labels, and count what does not fit the corpus.

    Args:
        queries: BEIR ``queries.jsonl``, or lab JSONL (``{"query", "label"}``).
        qrels: BEIR or TREC qrels (with BEIR queries), or None.
        spans: Span labels JSONL (with BEIR queries), or None.
        doc_ids: The corpus's document ids.
        doc_length: doc_id -> length of its normalised text (asked for span documents).

    Raises:
        ConfigError: Both or neither label file given where exactly one is needed.
        InputError: A file is malformed, or no query has a relevant document.
    """
    texts, labels, span_lines = _read_labels(queries, qrels, spans, doc_ids)
    known = Labels(
        {q: j for q, j in labels.qrels.items() if q in texts},
        {q: s for q, s in labels.spans.items() if q in texts},
        labels.kind,
    )
    evaluated = known.evaluated()
    if not evaluated:
        raise InputError(
            f"no query of {queries} has a judged-relevant document (grade >= 1) in the "
            "labels: check that the query ids match and the grade column"
        )
    ids = doc_ids if isinstance(doc_ids, set | frozenset) else set(doc_ids)
    span_docs = {d for docs in known.spans.values() for d in docs if d in ids}
    return LabeledSet(
        queries={qid: texts[qid] for qid in evaluated},
        labels=known,
        labels_file=os.fspath(qrels or spans or ""),
        excluded_no_relevant=len(texts) - len(evaluated),
        unknown_queries=sum(1 for qid in labels.qrels if qid not in texts),
        unknown_docs=count_unknown_docs(known.qrels, ids),
        spans_beyond_text=known.spans_beyond({d: doc_length(d) for d in span_docs}),
        span_lines=span_lines,
    )

"""One labeled set: the queries to ask and what is relevant for them, from any label file.

Three inputs are accepted: BEIR ``queries.jsonl`` with qrels (BEIR TSV or TREC), BEIR
queries with span labels, or the lab's JSONL whose ``label`` names the relevant documents.
What the inputs get wrong is counted, never silently dropped: judged queries missing from
the queries file, judgments naming documents not in the corpus, spans past the end of
their document, and queries without a judged-relevant document (left out, as trec_eval
leaves them out of its means).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval.evaluate import count_unknown_docs
from ctxselect.eval.lab import labels_to_qrels
from ctxselect.eval.labels import Labels, read_spans
from ctxselect.eval.qrels_io import load_qrels
from ctxselect.eval.queries_io import is_labeled_file, read_labeled, read_queries
from ctxselect.eval.results import labels_hash

PathLike = str | os.PathLike[str]
EMPTY_DOCS_NOTE = "judged documents that are empty (no text to index)"
EMPTY_JUDGMENTS_NOTE = "judgments of documents that are empty (no text to index)"
"""What a count of judgments (not of documents) of empty documents is, in reports."""
"""How reports name :attr:`LabeledSet.empty_docs` (``eval``, ``sweep``: the same words)."""


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
        unmatched_labels: Lab labels that match no document id, in file order: their
            queries are among ``excluded_no_relevant`` (``lab`` names them too).
        empty_docs: Judgments naming documents the corpus has with no text (never
            indexed; see :func:`note_empty_documents`), not counted in ``unknown_docs``.
        unknown_query_ids: The ``unknown_queries`` ids, sorted.
        unknown_doc_ids: The distinct documents of ``unknown_docs``, sorted.
        empty_doc_ids: The distinct documents of ``empty_docs``, sorted.
        excluded_query_ids: The ``excluded_no_relevant`` query ids, sorted.
    """

    queries: dict[str, str]
    labels: Labels
    labels_file: str
    excluded_no_relevant: int
    unknown_queries: int
    unknown_docs: int
    spans_beyond_text: int
    span_lines: tuple[str, ...] = ()
    unmatched_labels: tuple[str, ...] = ()
    empty_docs: int = 0
    unknown_query_ids: tuple[str, ...] = ()
    unknown_doc_ids: tuple[str, ...] = ()
    empty_doc_ids: tuple[str, ...] = ()
    excluded_query_ids: tuple[str, ...] = ()

    def content_hash(self) -> str:
        """Hash of the query texts and labels, so results are keyed by what judged them."""
        return labels_hash(self.queries, self.labels.qrels, self.span_lines)


def _read_labels(
    queries: PathLike, qrels: PathLike | None, spans: PathLike | None, doc_ids: Collection[str]
) -> tuple[dict[str, str], Labels, tuple[str, ...], tuple[str, ...]]:
    """Query texts, labels, span lines (for the hash) and the lab labels matching nothing."""
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
        judged = labels_to_qrels(items, doc_ids)
        unmatched = tuple(item.label for item in items if not judged[item.qid])
        return texts, Labels.from_qrels(judged), (), unmatched
    if spans is not None:
        span_list = read_spans(spans)
        lines = tuple(f"s\t{s.qid}\t{s.doc_id}\t{s.start}\t{s.end}\t{s.grade}" for s in span_list)
        return read_queries(queries), Labels.from_spans(span_list), lines, ()
    if qrels is not None:
        return read_queries(queries), Labels.from_qrels(load_qrels(qrels)), (), ()
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
        InputError: A file is malformed or holds no query, or no query has a relevant
            document.
    """
    texts, labels, span_lines, unmatched = _read_labels(queries, qrels, spans, doc_ids)
    if not texts:
        raise InputError(
            f"queries file {queries} holds no queries: it is empty; give BEIR lines "
            '({"_id": "q1", "text": "..."}) or lab JSONL ({"query": "...", "label": "..."})'
        )
    known = Labels(
        {q: j for q, j in labels.qrels.items() if q in texts},
        {q: s for q, s in labels.spans.items() if q in texts},
        labels.kind,
    )
    evaluated = known.evaluated()
    if not evaluated and unmatched:  # lab JSONL: no query ids, no grade column
        shown = ", ".join(repr(label) for label in unmatched[:5])
        more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
        raise InputError(
            f"no label of {queries} matches a document of the corpus ({shown}{more}): a "
            f"lab label is a document id, or the start of a file name up to a non-letter "
            f"('02' names 02-chunking.md); check the labels against the corpus's ids"
        )
    if not evaluated:
        raise InputError(
            f"no query of {queries} has a judged-relevant document (grade >= 1) in the "
            "labels: check that the query ids match and the grade column"
        )
    ids = doc_ids if isinstance(doc_ids, set | frozenset) else set(doc_ids)
    span_docs = {d for docs in known.spans.values() for d in docs if d in ids}
    unknown_qids = sorted(qid for qid in labels.qrels if qid not in texts)
    unknown_doc_ids = sorted({d for judged in known.qrels.values() for d in judged if d not in ids})
    return LabeledSet(
        queries={qid: texts[qid] for qid in evaluated},
        labels=known,
        labels_file=os.fspath(qrels or spans or ""),
        excluded_no_relevant=len(texts) - len(evaluated),
        excluded_query_ids=tuple(sorted(set(texts) - set(evaluated))),
        unknown_queries=len(unknown_qids),
        unknown_docs=count_unknown_docs(known.qrels, ids),
        spans_beyond_text=known.spans_beyond({d: doc_length(d) for d in span_docs}),
        span_lines=span_lines,
        unmatched_labels=unmatched,
        unknown_query_ids=tuple(unknown_qids),
        unknown_doc_ids=tuple(unknown_doc_ids),
    )


def note_empty_documents(
    labeled: LabeledSet, corpus: PathLike | Sequence[PathLike], doc_ids: Collection[str]
) -> LabeledSet:
    """Count judgments of documents that ``corpus`` holds without text apart.

    Ingest skips an empty document (a BEIR record with no title and text, Cranfield's
    ``995``; a whitespace-only file), so its judgments name no indexed document; they
    move from ``unknown_docs`` to ``empty_docs``, which says why. ``corpus`` is one
    folder or BEIR ``.jsonl``, or several (an index built from several roots): each is
    asked only about the documents the ones before it did not hold empty.
    """
    ids = doc_ids if isinstance(doc_ids, set | frozenset) else set(doc_ids)
    missing = {d for judged in labeled.labels.qrels.values() for d in judged if d not in ids}
    empty: set[str] = set()
    for source in [corpus] if isinstance(corpus, str | os.PathLike) else corpus:
        if missing - empty:
            empty |= _empty_documents(Path(source), missing - empty)
    if not empty:
        return labeled
    pairs = sum(1 for judged in labeled.labels.qrels.values() for d in judged if d in empty)
    return dataclasses.replace(
        labeled,
        unknown_docs=labeled.unknown_docs - pairs,
        empty_docs=pairs,
        unknown_doc_ids=tuple(d for d in labeled.unknown_doc_ids if d not in empty),
        empty_doc_ids=tuple(sorted(empty)),
    )


def _empty_documents(corpus: Path, candidates: set[str]) -> set[str]:
    """The ``candidates`` that ``corpus`` (a folder or a BEIR ``.jsonl``) holds empty.

    The caller names the file ingest read: a BEIR dataset folder's ``corpus.jsonl``.
    """
    if corpus.is_dir():
        return {
            d for d in candidates
            if (corpus / d).is_file() and not (corpus / d).read_bytes().strip()
        }  # fmt: skip
    if corpus.suffix != ".jsonl" or not corpus.is_file():
        return set()
    found: set[str] = set()
    with corpus.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # ingest already said what is wrong with such a line
            if not isinstance(record, dict) or str(record.get("_id")) not in candidates:
                continue
            title, text = record.get("title") or "", record.get("text") or ""
            if isinstance(title, str) and isinstance(text, str) and not (title + text).strip():
                found.add(str(record["_id"]))
    return found

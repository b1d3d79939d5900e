"""Labels that do not depend on chunking: judged documents, or judged character spans.

Labels name documents (qrels) or spans of a document's normalised text, never chunk ids,
so any chunking can be scored against the same labels. The rule, in one place:

- With document labels, a chunk (or a selected piece) has its document's grade.
- With span labels (``{"qid", "doc_id", "start", "end", "grade"}`` per JSONL line), a
  chunk has the highest grade among the spans of its query that it overlaps (shares at
  least one character with), else 0; a document has the highest grade of its spans.

A grade >= 1 means relevant, as in trec_eval.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ctxselect.errors import ConfigError
from ctxselect.eval._files import PathLike, line_error, parse_grade, read_lines
from ctxselect.eval.metrics import RELEVANT, n_relevant
from ctxselect.types import Qrels

LEVELS = ("doc", "chunk")
"""What ranking metrics judge: documents (chunk runs collapsed by best chunk) or chunks."""

_SPAN_EXPECTED = (
    'a JSON object {"qid": "<query id>", "doc_id": "<document id>", "start": <int>, '
    '"end": <int greater than start>, "grade": <int, default 1>}'
)


def check_level(level: str) -> str:
    """Return ``level`` if it is ``doc`` or ``chunk``, else raise ConfigError."""
    if level not in LEVELS:
        raise ConfigError(f"unknown level {level!r}: choose one of {', '.join(LEVELS)}")
    return level


@dataclass(frozen=True, slots=True)
class Span:
    """A judged character span ``[start, end)`` of one document's normalised text."""

    qid: str
    doc_id: str
    start: int
    end: int
    grade: int = 1


def _id_field(record: Mapping[str, object], key: str) -> str | None:
    value = record.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _int_field(record: Mapping[str, object], key: str, default: int | None = None) -> int | None:
    value = record.get(key, default)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return parse_grade(value) if isinstance(value, str) else None


def read_spans(path: PathLike) -> list[Span]:
    """Read span labels: one ``{"qid", "doc_id", "start", "end", "grade"}`` per line.

    ``grade`` is optional (default 1); offsets are characters of the document's
    normalised text, ``end`` exclusive.

    Raises:
        InputError: A line is not such an object, an offset is negative, or ``end`` is
            not greater than ``start`` (file and line named).
    """
    spans: list[Span] = []
    for number, line in read_lines(path, "span labels"):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise line_error(path, number, _SPAN_EXPECTED, line) from None
        if not isinstance(record, dict):
            raise line_error(path, number, _SPAN_EXPECTED, line)
        qid, doc_id = _id_field(record, "qid"), _id_field(record, "doc_id")
        start, end = _int_field(record, "start"), _int_field(record, "end")
        grade = _int_field(record, "grade", 1)
        if qid is None or doc_id is None or start is None or end is None or grade is None:
            raise line_error(path, number, _SPAN_EXPECTED, line)
        if start < 0 or end <= start:
            raise line_error(path, number, "0 <= start < end", line)
        spans.append(Span(qid, doc_id, start, end, grade))
    return spans


@dataclass(frozen=True, slots=True)
class Labels:
    """What is relevant for each query: documents, or spans of documents.

    Attributes:
        qrels: qid -> {doc_id: grade}; with span labels, each document's best span grade.
        spans: qid -> doc_id -> that query's spans in the document (empty with document
            labels).
        kind: ``"documents"`` or ``"spans"``.
    """

    qrels: Qrels
    spans: dict[str, dict[str, tuple[Span, ...]]] = field(default_factory=dict)
    kind: str = "documents"

    @classmethod
    def from_qrels(cls, qrels: Qrels) -> Labels:
        """Document labels."""
        return cls({qid: dict(judged) for qid, judged in qrels.items()})

    @classmethod
    def from_spans(cls, spans: Iterable[Span]) -> Labels:
        """Span labels; a document's grade is the highest grade of its spans."""
        by_query: dict[str, dict[str, list[Span]]] = {}
        qrels: Qrels = {}
        for span in spans:
            by_query.setdefault(span.qid, {}).setdefault(span.doc_id, []).append(span)
            judged = qrels.setdefault(span.qid, {})
            judged[span.doc_id] = max(judged.get(span.doc_id, span.grade), span.grade)
        tidy = {
            qid: {doc: tuple(sorted(items, key=lambda s: s.start)) for doc, items in docs.items()}
            for qid, docs in by_query.items()
        }
        return cls(qrels, tidy, "spans")

    def evaluated(self) -> list[str]:
        """Query ids with at least one relevant (grade >= 1) document or span, sorted."""
        return sorted(qid for qid, judged in self.qrels.items() if n_relevant(judged) > 0)

    def grade(self, qid: str, doc_id: str, start: int, end: int) -> int:
        """Grade of the text ``[start, end)`` of ``doc_id`` for query ``qid``."""
        if self.kind != "spans":
            return self.qrels.get(qid, {}).get(doc_id, 0)
        spans = self.spans.get(qid, {}).get(doc_id, ())
        return max((s.grade for s in spans if s.start < end and start < s.end), default=0)

    def relevant_chars(self, qid: str, doc_id: str, start: int, end: int) -> int:
        """Characters of ``[start, end)`` that are relevant for ``qid``.

        Document labels: all of them when the document is relevant, else none. Span
        labels: those inside the union of the query's relevant spans.
        """
        if self.kind != "spans":
            return end - start if self.grade(qid, doc_id, start, end) >= RELEVANT else 0
        covered, reach = 0, start
        for span in self.spans.get(qid, {}).get(doc_id, ()):
            if span.grade < RELEVANT or span.end <= reach:
                continue
            lo, hi = max(span.start, reach), min(span.end, end)
            if lo >= end:
                break
            covered += max(0, hi - lo)
            reach = max(reach, hi)
        return covered

    def chunk_qrels(
        self,
        chunk_ids: Sequence[str],
        doc_ids: Sequence[str],
        starts: Sequence[int],
        ends: Sequence[int],
    ) -> Qrels:
        """Judge chunks (given as columns) by this rule, for every evaluated query.

        Only relevant chunks are listed; an evaluated query whose relevant documents
        have no chunk gets an empty judgment set (so evaluation excludes and counts it).
        """
        rows_of: dict[str, list[int]] = {}
        for row, doc_id in enumerate(doc_ids):
            rows_of.setdefault(doc_id, []).append(row)
        out: Qrels = {}
        for qid in self.evaluated():
            judged: dict[str, int] = {}
            for doc_id, doc_grade in self.qrels[qid].items():
                if doc_grade < RELEVANT:
                    continue
                for row in rows_of.get(doc_id, ()):
                    grade = self.grade(qid, doc_id, starts[row], ends[row])
                    if grade >= RELEVANT:
                        judged[chunk_ids[row]] = grade
            out[qid] = judged
        return out

    def spans_beyond(self, lengths: Mapping[str, int]) -> int:
        """Count spans of known documents that end past the document's text.

        Such a span was most likely cut from a differently normalised text; it still
        counts up to the text's end. Spans of unknown documents are counted apart.
        """
        return sum(
            1
            for docs in self.spans.values()
            for doc_id, spans in docs.items()
            if doc_id in lengths
            for span in spans
            if span.end > lengths[doc_id]
        )

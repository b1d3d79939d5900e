"""Read queries: BEIR ``queries.jsonl``, TSV queries, lab JSONL, and a BEIR split folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxselect.errors import InputError
from ctxselect.eval._files import PathLike, line_error, read_lines
from ctxselect.eval.qrels_io import load_qrels
from ctxselect.types import Qrels

_QUERY_EXPECTED = 'a JSON object {"_id": "<query id>", "text": "<query text>"}'
_TSV_EXPECTED = "a TSV line '<query id><TAB><query text>'"
_TSV_HEADER_IDS = ("_id", "id", "qid", "query-id", "query_id")
_LABELED_EXPECTED = (
    'a JSON object {"query": "<text>", "label": "<doc id or its leading part>"} '
    '(optional "qid": "<id>")'
)


@dataclass(frozen=True, slots=True)
class LabeledQuery:
    """One lab query and the label naming where its answer is (see ``label_matches``)."""

    qid: str
    query: str
    label: str


def _json_object(path: PathLike, number: int, line: str, expected: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        raise line_error(path, number, expected, line) from None
    if not isinstance(value, dict):
        raise line_error(path, number, expected, line)
    return value


def _text_field(record: dict[str, Any], key: str, *, ids: bool = False) -> str | None:
    value = record.get(key)
    if ids and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # some BEIR exports write numeric ids unquoted
    if isinstance(value, str) and value.strip():
        return value if not ids else value.strip()
    return None


def is_tsv_queries(path: PathLike) -> bool:
    """Tell whether a queries file is TSV (``qid<TAB>text``): its first line is not a JSON
    object and holds a tab.

    Raises:
        InputError: The file is missing or unreadable.
    """
    for _, line in read_lines(path, "queries"):
        return not line.lstrip().startswith("{") and "\t" in line
    return False


def _tsv_records(path: PathLike) -> Iterator[tuple[int, str, str | None, str | None]]:
    """(line number, line, qid, text) of a TSV queries file; a header line is skipped."""
    for index, (number, line) in enumerate(read_lines(path, "queries")):
        qid, tab, text = line.partition("\t")
        if index == 0 and qid.strip().lower() in _TSV_HEADER_IDS:
            continue
        yield number, line, qid.strip() or None, text.strip() if tab else None


def read_queries(path: PathLike) -> dict[str, str]:
    """Read BEIR ``queries.jsonl`` (one ``{"_id", "text"}`` object per line), or TSV queries
    (``qid<TAB>text`` per line, as MS MARCO ships them; a header line is skipped).

    Returns:
        qid -> query text, in file order.

    Raises:
        InputError: A line is not such an object (or TSV line), or a query id repeats.
    """
    queries: dict[str, str] = {}
    for number, line, qid, text in _query_records(path):
        if qid is not None and text is not None and not text.strip():
            raise InputError(
                f"{path!s}:{number}: query {qid!r} has an empty text: there is nothing to "
                f"search for; give it its question, or remove that line"
            )
        if qid is None or text is None:
            expected = _TSV_EXPECTED if is_tsv_queries(path) else _QUERY_EXPECTED
            raise line_error(path, number, expected, line)
        if qid in queries:
            raise InputError(
                f"{path!s}:{number}: query id {qid!r} appears twice: ids must be unique"
            )
        queries[qid] = text
    return queries


def _query_records(path: PathLike) -> Iterator[tuple[int, str, str | None, str | None]]:
    """(line number, line, qid, text) of a BEIR JSONL or TSV queries file."""
    if is_tsv_queries(path):
        yield from _tsv_records(path)
        return
    for number, line in read_lines(path, "queries"):
        record = _json_object(path, number, line, _QUERY_EXPECTED)
        text = record.get("text")  # a blank text is told apart from a missing one
        yield (
            number,
            line,
            _text_field(record, "_id", ids=True),
            text if isinstance(text, str) else None,
        )


def read_labeled(path: PathLike) -> list[LabeledQuery]:
    """Read the lab's labeled JSONL: ``{"query": ..., "label": ...}`` per line.

    A line without ``"qid"`` gets ``q<n>``, where ``n`` counts the queries of the file
    from 1 (blank lines are not counted). Labels are strings: write ``"02"``, not ``2``,
    since ``"2"`` and ``"02"`` match different documents.

    Raises:
        InputError: A line is not such an object, a label is not a non-empty string,
            or a query id repeats.
    """
    items: list[LabeledQuery] = []
    seen: set[str] = set()
    for number, line in read_lines(path, "labeled queries"):
        record = _json_object(path, number, line, _LABELED_EXPECTED)
        query = _text_field(record, "query")
        label = _text_field(record, "label", ids=False)
        qid = _text_field(record, "qid", ids=True) if "qid" in record else f"q{len(items) + 1}"
        if query is None or label is None or qid is None:
            raise line_error(path, number, _LABELED_EXPECTED, line)
        if qid in seen:
            raise InputError(
                f"{path!s}:{number}: query id {qid!r} appears twice: give every line a "
                'unique "qid", or none so ids q1, q2, ... are numbered by position'
            )
        seen.add(qid)
        items.append(LabeledQuery(qid, query, label.strip()))
    return items


def is_labeled_file(path: PathLike) -> bool:
    """Tell whether a queries file is the lab's labeled JSONL (its first line has "label").

    Raises:
        InputError: The file is missing, unreadable or its first line is not a JSON object.
    """
    for number, line in read_lines(path, "queries"):
        if not line.lstrip().startswith("{") and "\t" in line:
            return False  # TSV queries: qid<TAB>text
        expected = f"{_QUERY_EXPECTED}, {_LABELED_EXPECTED} or {_TSV_EXPECTED}"
        record = _json_object(path, number, line, expected)
        return "label" in record and "_id" not in record
    return False


def load_beir_split(folder: PathLike, split: str = "test") -> tuple[dict[str, str], Qrels]:
    """Load the queries and qrels of one split of a BEIR dataset folder.

    The folder holds ``queries.jsonl`` and ``qrels/<split>.tsv``. As BEIR's own loader
    does, only queries that the split judges are returned.

    Returns:
        (qid -> query text, qrels), both restricted to the split's queries.

    Raises:
        InputError: A file is missing or malformed, or the split judges a query that
            ``queries.jsonl`` lacks.
    """
    root = Path(folder)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise InputError(
            f"no qrels for split {split!r} at {qrels_path}: expected the BEIR layout "
            f"<folder>/qrels/<split>.tsv; splits found: {', '.join(splits) or 'none'}"
        )
    qrels = load_qrels(qrels_path)
    all_queries = read_queries(root / "queries.jsonl")
    unknown = sorted(qid for qid in qrels if qid not in all_queries)
    if unknown:
        raise InputError(
            f"{qrels_path} judges {len(unknown)} queries missing from "
            f"{root / 'queries.jsonl'} (e.g. {', '.join(unknown[:3])}): use the queries "
            "file of the same dataset version"
        )
    return {qid: text for qid, text in all_queries.items() if qid in qrels}, qrels

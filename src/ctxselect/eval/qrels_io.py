"""Read and write relevance judgments (qrels) in the BEIR TSV and TREC formats.

- BEIR: ``query-id<TAB>corpus-id<TAB>score`` per line, the header line optional.
- TREC: ``qid iter docno grade`` per line, whitespace-separated; ``iter`` is ignored
  (trec_eval's get_qrels.c). Lines starting with ``#`` are comments in both.

:func:`load_qrels` tells the two apart from the first line that is not a comment.
"""

from __future__ import annotations

from collections.abc import Iterator

from ctxselect.errors import InputError
from ctxselect.eval._files import PathLike, line_error, parse_grade, read_lines
from ctxselect.types import Qrels

BEIR_HEADER = ("query-id", "corpus-id", "score")
_BEIR_EXPECTED = "3 tab-separated fields 'query-id<TAB>corpus-id<TAB>score' (score an integer)"
_TREC_EXPECTED = "4 whitespace-separated fields 'qid 0 docid grade' (grade an integer)"


def _records(path: PathLike) -> Iterator[tuple[int, str]]:
    for number, line in read_lines(path, "qrels"):
        if not line.lstrip().startswith("#"):
            yield number, line


def _is_header(line: str) -> bool:
    return line.split()[0].lower() == BEIR_HEADER[0]


def detect_qrels_format(path: PathLike) -> str:
    """Return ``"beir"`` or ``"trec"`` from the first non-comment line of ``path``.

    Raises:
        InputError: The file is empty or its first line fits neither format.
    """
    for number, line in _records(path):
        if _is_header(line) or len(line.split("\t")) == 3:
            return "beir"
        if len(line.split()) == 4:
            return "trec"
        raise line_error(path, number, f"{_BEIR_EXPECTED} or {_TREC_EXPECTED}", line)
    raise InputError(f"qrels file {path!s} holds no judgments: it is empty")


def load_qrels(path: PathLike) -> Qrels:
    """Read a qrels file in BEIR TSV or TREC format, detected from its first line.

    Returns:
        qid -> {doc_id: grade}; grade >= 1 means relevant.

    Raises:
        InputError: The file is missing, or a line is malformed (file and line named),
            or one document is judged twice with different grades.
    """
    if detect_qrels_format(path) == "beir":
        return read_beir_qrels(path)
    return read_trec_qrels(path)


def read_beir_qrels(path: PathLike) -> Qrels:
    """Read BEIR qrels: ``query-id<TAB>corpus-id<TAB>score``, header line optional.

    Raises:
        InputError: A line does not have three tab-separated fields with an integer
            score, or a document is judged twice with different grades.
    """
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    for index, (number, line) in enumerate(_records(path)):
        if index == 0 and _is_header(line):
            continue
        fields = [field.strip() for field in line.split("\t")]
        grade = parse_grade(fields[2]) if len(fields) == 3 else None
        if grade is None or not fields[0] or not fields[1]:
            raise line_error(path, number, _BEIR_EXPECTED, line)
        _add(qrels, seen, path, number, (fields[0], fields[1], grade))
    return qrels


def read_trec_qrels(path: PathLike) -> Qrels:
    """Read TREC qrels: ``qid iter docno grade``, whitespace-separated.

    Raises:
        InputError: A line does not have four fields with an integer grade, or a
            document is judged twice with different grades.
    """
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    for number, line in _records(path):
        fields = line.split()
        grade = parse_grade(fields[3]) if len(fields) == 4 else None
        if grade is None:
            raise line_error(path, number, _TREC_EXPECTED, line)
        if not _is_iteration(fields[1]):
            raise InputError(
                f"{path!s}:{number}: the second field of a TREC qrels line is the iteration "
                f"(0, or Q0), found {fields[1]!r} in {line.strip()!r}: if the columns are "
                f"query id, document id and grade, keep those three, tab-separated (BEIR "
                f"qrels, header 'query-id<TAB>corpus-id<TAB>score' optional)"
            )
        _add(qrels, seen, path, number, (fields[0], fields[2], grade))
    return qrels


def _is_iteration(field: str) -> bool:
    """trec_eval ignores the iteration column; files hold 0, another integer, or Q0."""
    return field.lstrip("-").isdigit() or field.upper() == "Q0"


def _add(
    qrels: Qrels,
    seen: dict[tuple[str, str], int],
    path: PathLike,
    number: int,
    judgment: tuple[str, str, int],
) -> None:
    qid, doc_id, grade = judgment
    judged = qrels.setdefault(qid, {})
    if doc_id in judged and judged[doc_id] != grade:
        raise InputError(
            f"{path!s}:{number}: document {doc_id!r} of query {qid!r} is judged "
            f"{grade} here but {judged[doc_id]} on line {seen[(qid, doc_id)]}: keep one"
        )
    seen.setdefault((qid, doc_id), number)
    judged[doc_id] = grade


def write_trec_qrels(path: PathLike, qrels: Qrels) -> None:
    """Write qrels as TREC lines ``qid 0 docid grade``, sorted by qid then doc id.

    Raises:
        InputError: A query or document id is empty or holds whitespace, which the
            format cannot represent.
    """
    lines = []
    for qid in sorted(qrels):
        for doc_id in sorted(qrels[qid]):
            check_token(qid, "query id")
            check_token(doc_id, "document id")
            lines.append(f"{qid} 0 {doc_id} {int(qrels[qid][doc_id])}\n")
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)


def check_token(value: str, what: str) -> None:
    """Raise InputError unless ``value`` is a non-empty string without whitespace."""
    if not value or any(ch.isspace() for ch in value):
        raise InputError(
            f"{what} {value!r} cannot be written in a whitespace-separated TREC file: "
            "use ids without spaces"
        )

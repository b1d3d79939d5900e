"""BEIR corpus files: one JSON object per line with ``_id``, ``title`` and ``text``.

Layout as in Thakur et al. 2021 (BEIR). The first non-empty line decides whether a
``.jsonl`` file is a BEIR corpus. A bad line (not JSON, not a BEIR record, a field of the
wrong type) is an input error in a file the user named (``strict``); in a file met while
walking a folder it is skipped and the file is named as unreadable with the first bad
line (a repeated ``_id`` too: the first record keeps it), so one damaged export does not
stop the index of a whole tree. A record with a title and no text becomes a document
whose text is the title (and whose title is empty): chunks hold document text only, so
otherwise it could never be retrieved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ctxselect.errors import InputError
from ctxselect.ingest.fields import beir_fields
from ctxselect.ingest.report import Tally
from ctxselect.ingest.text import content_hash, decode, normalize, repair_surrogates
from ctxselect.types import Document

_EXPECTED = 'one JSON object per line with "_id" and "text" (and optionally "title")'
_PROGRESS_STEP = 1 << 20
BOM = b"\xef\xbb\xbf"  # one UTF-8 byte-order mark opening the file is not part of line 1


def load_beir(
    path: str,
    *,
    max_bytes: int,
    tally: Tally,
    advance: Callable[[int], object] | None = None,
    strict: bool = True,
) -> list[Document]:
    """Read every record of a BEIR ``corpus.jsonl`` as a Document of kind ``beir``.

    ``max_bytes`` applies to each record (line), since the file is a whole collection.

    Args:
        path: The ``.jsonl`` file.
        max_bytes: Records longer than this many bytes are skipped and counted.
        tally: Counters for skipped records and replaced invalid UTF-8.
        advance: Called with byte counts as the file is read (progress bars).
        strict: Raise on the first bad line (a file the user named); otherwise skip bad
            lines and add ``(path, reason)`` to ``tally.unreadable`` (a walked file).

    Returns:
        The documents in file order.

    Raises:
        InputError: With ``strict``: a line is not a valid BEIR corpus record.
        OSError: The file cannot be opened or read.
    """
    docs: list[Document] = []
    bad: list[str] = []
    seen: dict[str, int] = {}
    pending = 0
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            pending += len(raw)
            if advance is not None and pending >= _PROGRESS_STEP:
                advance(pending)
                pending = 0
            if lineno == 1:
                raw = raw.removeprefix(BOM)
            if len(raw) > max_bytes:
                tally.skip_too_large(f"{path}:{lineno}", len(raw), max_bytes, _record_id(raw))
                continue
            line, replaced = decode(raw)
            if not line.strip():
                continue
            try:
                doc = _document(_parse(line, path, lineno), path, lineno, tally, replaced)
            except InputError as exc:
                if strict:
                    raise
                bad.append(str(exc).removeprefix(f"{path}:"))
                continue
            if doc is not None and _keep_first(doc.doc_id, lineno, seen, None if strict else bad):
                docs.append(doc)
    if advance is not None and pending:
        advance(pending)
    if bad:
        tally.unreadable.append((path, _bad_lines_reason(bad)))
    return docs


def _keep_first(doc_id: str, lineno: int, seen: dict[str, int], bad: list[str] | None) -> bool:
    """Tell whether to keep a record: in a walked corpus (``bad`` given) a repeated ``_id``
    is a bad line, so one sloppy export does not stop the whole index; in a named corpus
    the duplicate is kept for the loader's unique-id check to refuse, naming both lines."""
    first = seen.setdefault(doc_id, lineno)
    if first == lineno or bad is None:
        return True
    bad.append(
        f"{lineno}: duplicate _id {doc_id!r} (first on line {first}, which was indexed): "
        f"doc ids must be unique; give that line its own _id, or remove it"
    )
    return False


_ID = re.compile(rb'"_id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


def _record_id(raw: bytes) -> str:
    """The ``_id`` of a record too large to load, read from its first KiB ("" if not there),
    so that a re-scan can keep the record's indexed version."""
    found = _ID.search(raw[:1024])
    if found is None:
        return ""
    try:
        value = json.loads(found.group(1).decode("utf-8", "replace"))
    except json.JSONDecodeError:
        return ""
    return str(value) if str(value).strip() else ""


def _bad_lines_reason(bad: list[str]) -> str:
    """Why a walked corpus file is named: how many lines were left out, and the first one."""
    if len(bad) == 1:
        return f"1 bad line not indexed (the other records were): line {bad[0]}"
    return f"{len(bad):,} bad lines not indexed (the other records were); first: line {bad[0]}"


def looks_like_beir(path: str) -> bool:
    """Tell whether the first non-empty line of ``path`` is a BEIR corpus record."""
    try:
        with open(path, "rb") as handle:
            for lineno, raw in enumerate(handle, 1):
                raw = raw.removeprefix(BOM) if lineno == 1 else raw
                if raw.strip():
                    record = json.loads(decode(raw)[0])
                    return isinstance(record, dict) and "_id" in record and "text" in record
    except (OSError, json.JSONDecodeError):
        return False
    return False


def _parse(line: str, path: str, lineno: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno}); "
            f"expected {_EXPECTED}; fix or remove that line"
        ) from None
    if not isinstance(record, dict) or "_id" not in record or "text" not in record:
        found = sorted(record) if isinstance(record, dict) else type(record).__name__
        raise InputError(
            f"{path}:{lineno}: not a BEIR corpus record: expected {_EXPECTED}, found "
            f"{found}; .jsonl files are read as BEIR corpora only"
        )
    return record


def _document(
    record: dict[str, Any], path: str, lineno: int, tally: Tally, replaced: bool
) -> Document | None:
    doc_id, title, text = record["_id"], record.get("title") or "", record["text"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise InputError(
            f'{path}:{lineno}: "_id" must be a string or integer, got {doc_id!r}: a document '
            f"id is text; fix or remove that line"
        )
    if not str(doc_id).strip():
        raise InputError(
            f'{path}:{lineno}: "_id" is empty: every record needs a document id (chunk ids '
            f"and qrels are built on it); give that line an id, or remove it"
        )
    if not isinstance(title, str) or not isinstance(text, str | None):
        found = type(title if not isinstance(title, str) else text).__name__
        raise InputError(
            f'{path}:{lineno}: "title" and "text" must be strings, found {found}: they are '
            f"the text that is indexed; quote the value, or fix or remove that line"
        )
    title, fixed_title = repair_surrogates(normalize(title))
    text, fixed_text = repair_surrogates(normalize(text or ""))
    if not title.strip() and not text.strip():
        tally.empty += 1
        return None
    if not text.strip():  # title only: chunks cut document text, so the title becomes it
        title, text = "", title
    if replaced or fixed_title or fixed_text:
        tally.loaded_with_replacement(f"{path}:{lineno}")
    fields = beir_fields(record.get("metadata"), f"{path}:{lineno}")
    # metadata changes re-index the line: the hash covers it (unchanged without metadata)
    hashed = text if not fields else text + "\0" + json.dumps(fields, ensure_ascii=False)
    return Document(
        doc_id=str(doc_id),
        text=text,
        title=title,
        source=f"{path}:{lineno}",
        content_hash=content_hash(title, hashed),
        kind="beir",
        fields=fields,
    )

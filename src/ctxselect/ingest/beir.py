"""BEIR corpus files: one JSON object per line with ``_id``, ``title`` and ``text``.

Layout as in Thakur et al. 2021 (BEIR). The first non-empty line decides whether a
``.jsonl`` file is a BEIR corpus; any other ``.jsonl`` layout is an input error. A record
with a title and no text becomes a document whose text is the title (and whose title is
empty): chunks hold document text only, so otherwise it could never be retrieved.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ctxselect.errors import InputError
from ctxselect.ingest.fields import beir_fields
from ctxselect.ingest.report import Tally
from ctxselect.ingest.text import content_hash, decode, normalize, repair_surrogates
from ctxselect.types import Document

_EXPECTED = 'one JSON object per line with "_id" and "text" (and optionally "title")'
_PROGRESS_STEP = 1 << 20


def load_beir(
    path: str, *, max_bytes: int, tally: Tally, advance: Callable[[int], object] | None = None
) -> list[Document]:
    """Read every record of a BEIR ``corpus.jsonl`` as a Document of kind ``beir``.

    ``max_bytes`` applies to each record (line), since the file is a whole collection.

    Args:
        path: The ``.jsonl`` file.
        max_bytes: Records longer than this many bytes are skipped and counted.
        tally: Counters for skipped records and replaced invalid UTF-8.
        advance: Called with byte counts as the file is read (progress bars).

    Returns:
        The documents in file order.

    Raises:
        InputError: The file is not in BEIR layout, or a line is not valid JSON.
        OSError: The file cannot be opened or read.
    """
    docs: list[Document] = []
    pending = 0
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            pending += len(raw)
            if advance is not None and pending >= _PROGRESS_STEP:
                advance(pending)
                pending = 0
            if len(raw) > max_bytes:
                tally.too_large += 1
                continue
            line, replaced = decode(raw)
            if not line.strip():
                continue
            record = _parse(line, path, lineno)
            doc = _document(record, path, lineno, tally, replaced)
            if doc is not None:
                docs.append(doc)
    if advance is not None and pending:
        advance(pending)
    return docs


def looks_like_beir(path: str) -> bool:
    """Tell whether the first non-empty line of ``path`` is a BEIR corpus record."""
    try:
        with open(path, "rb") as handle:
            for raw in handle:
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
        raise InputError(f'{path}:{lineno}: "_id" must be a string or integer, got {doc_id!r}')
    if not isinstance(title, str) or not isinstance(text, str | None):
        raise InputError(f'{path}:{lineno}: "title" and "text" must be strings')
    title, fixed_title = repair_surrogates(normalize(title))
    text, fixed_text = repair_surrogates(normalize(text or ""))
    if not title.strip() and not text.strip():
        tally.empty += 1
        return None
    if not text.strip():  # title only: chunks cut document text, so the title becomes it
        title, text = "", title
    if replaced or fixed_title or fixed_text:
        tally.decoded_with_replacement += 1
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

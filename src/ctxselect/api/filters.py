"""Filters: ``include``/``exclude`` globs and ``where`` metadata -> the rows a search ranks.

The globs are the ones ``grep`` takes (:mod:`ctxselect.api.globs`: gitignore patterns
over doc ids, checked so a mistake is an error naming the position), so grep and search
agree on what ``docs/`` or ``*.py`` means. ``where`` compares stored metadata: ``kind``
(the loader), ``language`` (code files), ``path`` (the doc id), ``title``, and the user
fields of each document (a BEIR line's ``metadata``, a Markdown file's front matter).
Several values of one key mean either; different keys must all hold.

A filter becomes a :class:`~ctxselect.retrieve.filters.RowMask` over the snapshot's rows,
and every retriever ranks only allowed rows, so ``k`` hits come back whenever ``k``
allowed chunks score (a filter applied after the top ``k`` would return fewer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ctxselect.api import globs
from ctxselect.errors import ConfigError
from ctxselect.retrieve.filters import RowMask
from ctxselect.stores import doc_fields
from ctxselect.types import Filter, Rows

BUILTIN_KEYS = doc_fields.FILTER_KEYS
"""Keys a ``where`` may always name (``language``: code files indexed since filters exist);
how stores merge them with user fields is :mod:`ctxselect.stores.doc_fields`."""
MAX_WHERE = 50
MAX_WHERE_CHARS = 1000

Globs = str | Sequence[str] | None
Where = str | Sequence[str] | Sequence[tuple[str, str]] | Mapping[str, str] | None


@dataclass(frozen=True, slots=True, eq=False)
class RowFilter:
    """A filter applied to one generation's rows.

    Attributes:
        mask: The rows a search may rank.
        documents: How many documents the filter keeps.
        note: Why it keeps none ("" when it keeps some): names the filter that did it.
    """

    mask: RowMask
    documents: int
    note: str = ""


def make_filter(include: Globs = None, exclude: Globs = None, where: Where = None) -> Filter:
    """Check and normalise the three filter arguments into a :class:`Filter`.

    Args:
        include: Gitignore globs over doc ids; a document must match one.
        exclude: Gitignore globs over doc ids; a document must match none.
        where: ``key=value`` strings (or ``(key, value)`` pairs, or a mapping).

    Raises:
        ConfigError: An invalid glob (with the position), a ``where`` item without
            ``=`` or with an empty key, or too many of them.
    """
    globs_in = _tuple(include, "include"), _tuple(exclude, "exclude")
    globs.doc_filter(*globs_in)  # raises on an invalid glob, naming it and the position
    return Filter(globs_in[0], globs_in[1], parse_where(where))


def _tuple(globs: Globs, name: str) -> tuple[str, ...]:
    if globs is None:
        return ()
    items = [globs] if isinstance(globs, str) else globs
    if (
        not isinstance(items, Iterable)
        or isinstance(items, bytes | Mapping)
        or not all(isinstance(g, str) for g in items)
    ):
        raise ConfigError(
            f"{name} must be a gitignore glob (str) or a list of them, got "
            f"{type(globs).__name__} {globs!r:.60}: pass e.g. 'docs/**' or ['*.md', 'src/']"
        )
    return tuple(items)


def parse_where(where: Where) -> tuple[tuple[str, str], ...]:
    """Turn ``where`` into ``(key, value)`` pairs, in order.

    Raises:
        ConfigError: An item without ``=``, an empty key, or more than ``MAX_WHERE`` items.
    """
    if where is None:
        return ()
    if isinstance(where, Mapping):
        items: Iterable[object] = [(str(k), str(v)) for k, v in where.items()]
    elif isinstance(where, str):
        items = [where]
    elif isinstance(where, Iterable) and not isinstance(where, bytes):
        items = list(where)
    else:
        raise ConfigError(
            f"where must be key=value strings, (key, value) pairs or a mapping, got "
            f"{type(where).__name__} {where!r:.60}: pass e.g. 'kind=code' or {{'kind': 'code'}}"
        )
    pairs = [_pair(item) for item in items]
    if len(pairs) > MAX_WHERE:
        raise ConfigError(f"pass at most {MAX_WHERE} where conditions, got {len(pairs)}")
    return tuple(pairs)


def _pair(item: object) -> tuple[str, str]:
    if isinstance(item, tuple | list) and len(item) == 2:
        key, value = str(item[0]).strip(), str(item[1])
    elif isinstance(item, str):
        if "=" not in item:
            raise ConfigError(
                f"where condition {item!r} has no '=': write key=value, such as kind=code, "
                f"language=python or path=README.md (keys: {', '.join(BUILTIN_KEYS)} and "
                f"the fields stored with each document)"
            )
        key, value = item.split("=", 1)
        key = key.strip()
    else:
        raise ConfigError(f"where condition {item!r} is not a key=value string")
    if not key or len(key) + len(value) > MAX_WHERE_CHARS:
        raise ConfigError(
            f"where condition {item!r} needs a key before '=' and at most "
            f"{MAX_WHERE_CHARS} characters: write key=value, such as kind=code"
        )
    return key, value.strip()


def row_doc_ids(rows: Rows) -> Sequence[str]:
    """The doc id of every row: a table's column, lazy rows' one read of them all, else
    from the chunk ids (``doc_id#ordinal``); "" for a row deleted since the base."""
    doc_ids = getattr(rows, "doc_ids", None)
    if doc_ids is not None and len(doc_ids) == len(rows):
        return list(doc_ids)
    read_all = getattr(rows, "all_doc_ids", None)
    if read_all is not None:
        return read_all()
    return [cid.rpartition("#")[0] for cid in rows.chunk_ids]


def filter_rows(
    filter: Filter,
    rows: Rows,
    fields_of: Callable[[Sequence[str]], Mapping[str, Mapping[str, str]]],
    field_keys: Callable[[], Sequence[str]],
) -> RowFilter:
    """Apply ``filter`` to ``rows``.

    Args:
        filter: The filter (not empty).
        rows: The snapshot's rows.
        fields_of: Doc ids -> each one's metadata (``kind``, ``title``... and user fields).
        field_keys: The metadata keys the index stores (for the unknown-key error).

    Raises:
        ConfigError: A ``where`` key that no document of the index has; the message
            lists the keys it does have.
    """
    per_row = row_doc_ids(rows)
    doc_ids = [d for d in dict.fromkeys(per_row) if d]  # "": a row deleted since the base
    kept, note = globs.doc_filter(filter.include, filter.exclude)(doc_ids)
    if kept and filter.where:
        fields = fields_of(kept)
        seen = set(BUILTIN_KEYS).union(*(f.keys() for f in fields.values()))
        if any(key not in seen for key, _ in filter.where):  # listing every key is a scan
            _check_keys(filter, field_keys())
        before = len(kept)
        kept = _where_keep(filter.where, kept, fields)
        if not kept:
            which = " the globs kept" if filter.include or filter.exclude else ""
            shown = " ".join(f"{k}={v}" for k, v in filter.where)
            note = f"where {shown} matches none of the {globs.documents(before)}{which}"
    allowed = set(kept)
    allow = np.fromiter((d in allowed for d in per_row), dtype=bool, count=len(per_row))
    return RowFilter(RowMask.of(allow), len(kept), note)


def _check_keys(filter: Filter, stored: Sequence[str]) -> None:
    known = set(stored) | set(BUILTIN_KEYS)
    unknown = sorted({k for k, _ in filter.where} - known)
    if unknown:
        raise ConfigError(
            f"where key {', '.join(map(repr, unknown))} is not stored in this index: its "
            f"documents have {', '.join(sorted(known))} (user fields come from BEIR "
            f"metadata and Markdown front matter; see `ctxselect info`)"
        )


def _where_keep(
    where: Sequence[tuple[str, str]],
    doc_ids: Sequence[str],
    fields: Mapping[str, Mapping[str, str]],
) -> list[str]:
    wanted: dict[str, set[str]] = {}
    for key, value in where:
        wanted.setdefault(key, set()).add(value)
    empty: Mapping[str, str] = {}
    return [
        d
        for d in doc_ids
        if all(fields.get(d, empty).get(k) in values for k, values in wanted.items())
    ]


def empty_note(filter: Filter, row_filter: RowFilter | None) -> str:
    """Why a filtered search returned nothing: the filter that kept no document, or that
    none of the documents it kept matches the query ("" without a filter)."""
    if not filter or row_filter is None:
        return ""
    if row_filter.note:
        return row_filter.note
    kept = globs.documents(row_filter.documents)
    return f"no chunk of the {kept} that {filter.describe()} keeps matches the query"


__all__ = [
    "BUILTIN_KEYS",
    "RowFilter",
    "empty_note",
    "filter_rows",
    "make_filter",
    "parse_where",
    "row_doc_ids",
]

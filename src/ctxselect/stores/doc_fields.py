"""Document metadata that ``--where`` filters on: the built-in keys and how a document's
own values and its user fields merge. Every store and the filter code read them here,
so one rule says which value wins on a clash.

Every stored document has ``kind`` (its loader), ``path`` (its doc id) and ``title``.
User fields (a BEIR line's ``metadata``, Markdown front matter, a code file's
``language``) come with the document; a user field never overrides ``kind`` or
``path``, and a user ``title`` (front matter) stands in only for a document without one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

STORED_KEYS = ("kind", "path", "title")
"""The keys every stored document has, in the order ``field_keys`` lists them."""
FILTER_KEYS = ("kind", "language", "path", "title")
"""The keys a ``where`` may always name: the stored ones and ``language`` (a code file's
user field, so an index without code files still accepts ``language=python``)."""


def merged(
    kind: str, path: str, title: str, user: Mapping[str, str] | Iterable[tuple[str, str]] = ()
) -> dict[str, str]:
    """Return a document's metadata: its user fields under its own ``kind``, ``path`` and
    ``title`` (a user ``title`` stands in for an empty one; ``title`` is "" without any)."""
    out = {"title": "", **dict(user)}
    out["kind"], out["path"] = kind, path
    if title:
        out["title"] = title
    return out


def all_keys(user_keys: Iterable[str]) -> list[str]:
    """Return every metadata key: :data:`STORED_KEYS`, then the other ``user_keys`` sorted."""
    return [*STORED_KEYS, *sorted(set(user_keys).difference(STORED_KEYS))]


__all__ = ["FILTER_KEYS", "STORED_KEYS", "all_keys", "merged"]

"""``open_store(uri)``: the one place that picks a store implementation by URI scheme.

A filesystem path (``str``, :class:`os.PathLike`, or a ``file:`` URI) opens the embedded
store; any other ``scheme://...`` opens the store registered under ``scheme``. A new
store is one subpackage of ``ctxselect.stores`` plus one line in :data:`SCHEMES` (or one
:func:`register_scheme` call); its module is imported only when a URI of its scheme is
opened, so the read path never loads a store it does not use.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from ctxselect.errors import ConfigError
from ctxselect.stores.base import Store

if TYPE_CHECKING:  # mypy checks that each registered store satisfies the protocol
    from ctxselect.stores.embedded.sqlite import SQLiteStore
    from ctxselect.stores.milvus.store import MilvusStore

    _EMBEDDED: type[Store] = SQLiteStore
    _MILVUS: type[Store] = MilvusStore

DEFAULT_WAIT = 30.0
"""Seconds :func:`open_store` waits for the writer lock when a schema-1 index must be
upgraded before it can be read (schemas 2 and 3 are read as they are; writers upgrade them)."""

StoreFactory = Callable[..., Store]
"""Makes a store: ``factory(location, *, create: bool, wait: float) -> Store``."""

SCHEMES: dict[str, str | StoreFactory] = {
    "file": "ctxselect.stores.embedded.sqlite:SQLiteStore",
    "milvus": "ctxselect.stores.milvus.store:MilvusStore",
}
"""Scheme -> its store's factory, or ``"module:attribute"`` naming it (imported on use).

The ``file`` factory gets a filesystem path; every other factory gets the whole URI.
"""

# Two letters at least, so a Windows drive (``C:\\ix``) stays a path.
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+)://")


def register_scheme(scheme: str, factory: str | StoreFactory) -> None:
    """Make :func:`open_store` open ``scheme://...`` URIs with ``factory``.

    Args:
        scheme: Lowercase URI scheme, e.g. ``"milvus"``.
        factory: ``factory(uri, *, create, wait) -> Store``, or ``"module:attribute"``
            naming one (imported when a URI of the scheme is first opened).
    """
    SCHEMES[scheme.lower()] = factory


def schemes() -> list[str]:
    """Return the URI schemes :func:`open_store` can open, sorted."""
    return sorted(SCHEMES)


def split_uri(uri: str | os.PathLike[str]) -> tuple[str, str]:
    """Return ``(scheme, location)``: ``("file", path)`` for a path or ``file:`` URI,
    else the URI's scheme and the whole URI.

    Raises:
        ConfigError: A ``file:`` URI names another host than this machine.
    """
    text = os.fspath(uri)
    if text.lower().startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise ConfigError(
                f"cannot open index {text!r}: a file: URI must name this machine, not "
                f"{parts.netloc!r}: give the folder as a path (or file:///ABSOLUTE/PATH)"
            )
        from urllib.request import url2pathname  # pulls in http.client: only for file: URIs

        return "file", url2pathname(parts.path)
    found = _SCHEME.match(text)
    if found is None:
        return "file", text
    return found["scheme"].lower(), text


def open_store(
    uri: str | os.PathLike[str], *, create: bool = False, wait: float = DEFAULT_WAIT
) -> Store:
    """Open the index at ``uri`` with the store its scheme names.

    Args:
        uri: An index folder (path or ``file:`` URI), or ``scheme://...`` of a
            registered store.
        create: Create an empty index when none exists; otherwise a missing one raises
            IndexNotFoundError naming the command that creates it.
        wait: Seconds to wait for the writer lock when the store must first upgrade an
            index written by an older ctxselect.

    Raises:
        ConfigError: No store is registered for the URI's scheme (the message lists the
            supported ones).
        IndexNotFoundError: No index at ``uri`` and ``create`` is False.
    """
    scheme, location = split_uri(uri)
    factory = SCHEMES.get(scheme)
    if factory is None:
        supported = ", ".join(f"{s}:" for s in schemes())
        raise ConfigError(
            f"cannot open index {os.fspath(uri)!r}: no store handles the scheme "
            f"{scheme!r} in this ctxselect (supported: a folder path, or {supported}): "
            f"give an index folder, or install a ctxselect whose stores include {scheme!r}"
        )
    return _resolve(factory)(location, create=create, wait=wait)


def _resolve(factory: str | StoreFactory) -> StoreFactory:
    if not isinstance(factory, str):
        return factory
    module, _, name = factory.partition(":")
    return cast(StoreFactory, getattr(importlib.import_module(module), name))


__all__ = ["DEFAULT_WAIT", "SCHEMES", "StoreFactory", "open_store", "register_scheme", "schemes"]

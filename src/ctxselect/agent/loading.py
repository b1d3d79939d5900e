"""Open an index for serving: load what every call needs now, so failures come early."""

from __future__ import annotations

import os
import sqlite3

from ctxselect import api
from ctxselect.errors import CtxselectError, IndexCorruptError


def load_index(index: str | os.PathLike[str] | None) -> api.Index:
    """Open an index and load its chunk table and default mode now, failing early.

    Raises:
        IndexNotFoundError: No index at ``index``.
        IndexCorruptError: The file is not a readable index, or parts of it are missing.
    """
    opened = api.open_index(index)
    try:
        opened.info()
        opened.retriever()
    except CtxselectError:
        opened.close()
        raise
    except (sqlite3.DatabaseError, KeyError, ValueError) as exc:
        opened.close()
        raise IndexCorruptError(
            f"{opened.path} could not be read as a ctxselect index ({exc}): rebuild it with "
            f"`ctxselect index PATH... --index {opened.path}`"
        ) from exc
    return opened


Generation = tuple[object, int, object]


def generation_of(index: api.Index) -> Generation:
    """The store ``index`` reads, its committed generation and the chunk table loaded: a
    write, a replaced folder or a reload changes one."""
    store = index.store
    return store, store.generation(), index.table


def same_generation(a: Generation, b: Generation) -> bool:
    """True when ``a`` and ``b`` name one store, generation and loaded chunk table."""
    return a[0] is b[0] and a[1] == b[1] and a[2] is b[2]


def changed_while_read(index: api.Index, what: str) -> str:
    """The error message of a call whose every run overlapped a write of ``index``."""
    return (
        f"{what} read the index {index.path} while it changed, twice (it is being "
        f"re-indexed): call again once the re-index has finished"
    )

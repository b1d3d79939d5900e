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

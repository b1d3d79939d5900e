"""Index reads refused in the words of the tools' arguments, not of CLI commands.

The core's messages point a person at the CLI (``come from `ctxselect search```, ``add
them with `ctxselect index --embedder minilm```). A session's caller is a model calling
tools, which cannot run commands: these lookups say what to pass instead.
"""

from __future__ import annotations

from ctxselect import api
from ctxselect.agent.limits import check_mode
from ctxselect.errors import ConfigError, NotFoundError
from ctxselect.retrieve.modes import embedding_modes, keyword_modes
from ctxselect.types import Chunk, Document


def resolve_mode(index: api.Index, mode: str, mmr: float | None = None) -> str:
    """Return ``mode`` if ``index`` can rank with it (and with ``mmr``), else raise.

    Raises:
        UnknownNameError: Not a retrieval mode.
        ConfigError: The mode, or ``mmr``, needs dense vectors and the index has none.
    """
    check_mode(mode, api.names("mode"))
    if index.settings.embedder is not None:
        return mode
    if mode in embedding_modes():
        raise ConfigError(
            f"mode {mode!r} needs dense vectors and this index has none: pass mode "
            f"{', '.join(keyword_modes())}, or leave mode out (dense vectors come from "
            f"building the index with an embedder)"
        )
    if mmr is not None:
        raise ConfigError(
            "mmr compares the chunks' dense vectors and this index has none: leave mmr out "
            "(dense vectors come from building the index with an embedder)"
        )
    return mode


def check_stop(index: api.Index, mode: str, stop: object) -> str | float:
    """Return ``stop`` as ``Index.select`` takes it, refusing a P threshold it cannot apply.

    Raises:
        ConfigError: Not ``auto``, ``none`` or a number in [0, 1] (``Index.select``'s
            message), or a number for a mode the index has no calibration for.
    """
    value = api.check_stop(stop)
    if isinstance(value, float) and index.calibration(mode) is None:
        raise ConfigError(
            f"stop={value:g} keeps chunks while their P(relevant) is at least {value:g}, and "
            f"this index has no P(relevant) for mode {mode!r}: pass stop auto or none "
            f"(P(relevant) comes from tuning the index on labeled queries)"
        )
    return value


def find_chunk(index: api.Index, chunk_id: str) -> Chunk:
    """Return the chunk ``chunk_id``; a missing one is refused naming where ids come from."""
    try:
        return index.get_chunk(chunk_id)
    except NotFoundError:
        raise NotFoundError(
            f"no chunk {chunk_id!r} in the index: chunk ids look like 'DOC_ID#N' and come "
            f"from search and select results"
        ) from None


def find_document(index: api.Index, doc_id: str) -> Document:
    """Return the document ``doc_id``; a missing one is refused naming where ids come from."""
    try:
        return index.get_document(doc_id)
    except NotFoundError:
        raise NotFoundError(
            f"no document {doc_id!r} in the index: document ids are paths relative to the "
            f"indexed root, as in the doc_id of search and select results"
        ) from None

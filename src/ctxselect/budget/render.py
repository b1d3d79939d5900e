"""Frame selected chunks for a prompt: markdown, xml or json lines, one piece per chunk.

A piece is one chunk (or merged run of chunks) with its framing: a source (doc id and
character span), the header when non-empty, and the text. Every piece starts with a
non-whitespace character and ends with ``"\\n"``. With GPT-style BPE tokenizers
(cl100k, o200k) no pre-token can run from a newline into a non-whitespace character, so
the tokens of pieces written one after another add up exactly:
``count(render(selection)) == sum(piece.tokens)``. For any counter that never counts a
concatenation higher than its parts (e.g. ``ceil(chars / 4)``) the sum is an upper bound.
There is no wrapper around the pieces, so there is nothing else to count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ctxselect.registry import Registry
from ctxselect.types import SelectedChunk, Selection

Framer = Callable[[str, int, int, str, str], str]
"""(doc_id, start, end, header, text) -> the framed piece of a prompt."""

FORMATS: Registry[Callable[..., str]] = Registry("format")
"""Context formats by name; each entry frames one piece."""

_NEWLINES = re.compile(r"\r\n|[\r\n\u2028\u2029]")
# Characters XML 1.0 cannot carry at all, not even as character references.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_XML_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
# Attribute values are whitespace-normalised by XML parsers: keep \n \r \t as references.
_XML_ATTR = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)


def source_label(doc_id: str, start: int, end: int) -> str:
    """Return the citation of a span, ``doc_id:start-end`` (e.g. ``docs/a.md:120-890``)."""
    return f"{doc_id}:{start}-{end}"


def _one_line(value: str) -> str:
    return _NEWLINES.sub(" ", value)


@FORMATS.register("markdown")
def frame_markdown(doc_id: str, start: int, end: int, header: str, text: str) -> str:
    """Frame a piece as a ``### source`` line, the header line, the text and a blank line.

    Newlines in the doc id or header become spaces so each stays on its own line.
    """
    head = f"### {_one_line(source_label(doc_id, start, end))}\n"
    if header:
        head += f"{_one_line(header)}\n"
    return f"{head}{text}\n\n"


def xml_text(value: str) -> str:
    """Escape ``value`` as XML character data (characters XML cannot hold become U+FFFD)."""
    return _XML_INVALID.sub("\ufffd", value).translate(_XML_TEXT)


def xml_attr(value: str) -> str:
    """Escape ``value`` for a double-quoted XML attribute, keeping newlines and tabs."""
    return _XML_INVALID.sub("\ufffd", value).translate(_XML_ATTR)


@FORMATS.register("xml")
def frame_xml(doc_id: str, start: int, end: int, header: str, text: str) -> str:
    """Frame a piece as ``<chunk source=".." start=".." end=".." header="..">text</chunk>``.

    The header attribute is left out when empty. Each piece parses as an XML element that
    gives back the doc id, span, header and text (except characters XML 1.0 forbids, such
    as NUL, which become U+FFFD).
    """
    attrs = f'source="{xml_attr(doc_id)}" start="{start}" end="{end}"'
    if header:
        attrs += f' header="{xml_attr(header)}"'
    return f"<chunk {attrs}>{xml_text(text)}</chunk>\n"


@FORMATS.register("json")
def frame_json(doc_id: str, start: int, end: int, header: str, text: str) -> str:
    """Frame a piece as one JSON object on one line (JSON Lines); no header key when empty."""
    record: dict[str, object] = {"doc_id": doc_id, "start": start, "end": end}
    if header:
        record["header"] = header
    record["text"] = text
    # ensure_ascii=False: \\uXXXX escapes would cost several tokens per character.
    return json.dumps(record, ensure_ascii=False) + "\n"


def frame(doc_id: str, start: int, end: int, header: str, text: str, format: str) -> str:
    """Frame one piece in ``format``.

    Raises:
        UnknownNameError: ``format`` is not a registered format.
    """
    return FORMATS.get(format)(doc_id, start, end, header, text)


def render_chunk(chunk: SelectedChunk, format: str = "markdown") -> str:
    """Return the framed piece of one selected chunk, exactly as the packer costed it."""
    return frame(chunk.doc_id, chunk.start, chunk.end, chunk.header, chunk.text, format)


def render(selection: Selection, format: str | None = None) -> str:
    """Return the context block of ``selection`` as a prompt would contain it.

    Pieces come in selection order, one after another with nothing around them. Use the
    format the selection was packed with, or its token count will not match.

    Args:
        selection: What a packer chose.
        format: A name in :data:`FORMATS` (``markdown``, ``xml``, ``json``); default:
            the format the selection was packed with.

    Returns:
        The concatenated pieces; ``""`` for an empty selection.

    Raises:
        UnknownNameError: ``format`` is not a registered format.
    """
    framer = FORMATS.get(format or selection.format or "markdown")
    return "".join(framer(c.doc_id, c.start, c.end, c.header, c.text) for c in selection.chunks)

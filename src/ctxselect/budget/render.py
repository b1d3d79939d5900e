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

from ctxselect.errors import ConfigError
from ctxselect.registry import Registry
from ctxselect.types import SelectedChunk, Selection, one_line

Framer = Callable[[str, int, int, str, str], str]
"""(doc_id, start, end, header, text) -> the framed piece of a prompt."""

FORMATS: Registry[Callable[..., str]] = Registry("format")
"""Context formats by name; each entry frames one piece."""

_NEWLINES = re.compile(r"\r\n|[\r\n\u2028\u2029]")
_TILDES = re.compile("~+")
# Characters XML 1.0 cannot carry at all, not even as character references.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
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
    """Frame a piece as a tilde-fenced block whose opening line names the source.

    ``~~~ doc_id:start-end | header`` opens the block (no ``| header`` when empty), the
    text follows as written, a fence closes it, and a blank line ends the piece. The
    fence is longer than any run of ``~`` in the text, so no line of the text can close
    it, and headings inside Markdown documents stay inside their piece: the framing
    cannot be mistaken for content. Control characters in the doc id are escaped
    (:func:`one_line`: a newline as ``\\n``); newlines in the header become spaces.
    """
    fence = "~" * max(3, 1 + max((len(run) for run in _TILDES.findall(text)), default=0))
    label = source_label(one_line(doc_id), start, end)
    if header:
        label += f" | {_one_line(header)}"
    return f"{fence} {label}\n{text}\n{fence}\n\n"


def xml_attr(value: str) -> str:
    """Escape ``value`` for a double-quoted XML attribute, keeping newlines and tabs."""
    return _XML_INVALID.sub("\ufffd", value).translate(_XML_ATTR)


def xml_cdata(value: str) -> str:
    """Wrap ``value`` in CDATA sections, so code reads as written (``->``, not ``-&gt;``).

    A ``]]>`` inside is split across two sections, and ``\\r`` (which XML parsers turn
    into ``\\n``) goes between sections as ``&#13;``; characters XML cannot hold become
    U+FFFD.
    """
    clean = _XML_INVALID.sub("\ufffd", value)
    body = clean.replace("]]>", "]]]]><![CDATA[>").replace("\r", "]]>&#13;<![CDATA[")
    return f"<![CDATA[{body}]]>"


@FORMATS.register("xml")
def frame_xml(doc_id: str, start: int, end: int, header: str, text: str) -> str:
    """Frame a piece as ``<chunk source=".." start=".." end=".." header="..">``, CDATA text.

    ``<![CDATA[text]]></chunk>`` follows the tag; the header attribute is left out when
    empty. As CDATA the text reads exactly as written (``->``, not ``-&gt;``), which is
    what an LLM should see. Each piece parses as an XML element that gives back the doc id,
    span, header and text (except characters XML 1.0 forbids, such as NUL, which become
    U+FFFD).
    """
    attrs = f'source="{xml_attr(doc_id)}" start="{start}" end="{end}"'
    if header:
        attrs += f' header="{xml_attr(header)}"'
    return f"<chunk {attrs}>{xml_cdata(text)}</chunk>\n"


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
        ConfigError: ``selection`` is not a Selection.
        UnknownNameError: ``format`` is not a registered format.
    """
    if not isinstance(selection, Selection):
        raise ConfigError(
            f"selection must be a ctxselect Selection, got {type(selection).__name__} "
            f"{selection!r:.60}: pass what Index.select returned"
        )
    framer = FORMATS.get(format or selection.format or "markdown")
    return "".join(framer(c.doc_id, c.start, c.end, c.header, c.text) for c in selection.chunks)

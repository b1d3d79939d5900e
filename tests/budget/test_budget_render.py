"""Framing formats: exact pieces, escaping, round trips, and additive token counts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from budget_helpers import COUNTER
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.budget import FORMATS, frame, render, render_chunk, source_label
from ctxselect.budget.render import frame_xml, xml_attr
from ctxselect.errors import UnknownNameError
from ctxselect.types import SelectedChunk, Selection


def _chunk(doc_id: str, start: int, text: str, header: str = "") -> SelectedChunk:
    return SelectedChunk(
        chunk_ids=(f"{doc_id}#0",),
        doc_id=doc_id,
        start=start,
        end=start + len(text),
        text=text,
        header=header,
        score=1.0,
        n_tokens=COUNTER.count(text),
        tokens=0,
    )


SMALL = Selection(
    chunks=(
        _chunk("docs/02-chunking.md", 120, "Chunks carry offsets.", "Guide > Chunking"),
        _chunk("notes.txt", 0, "Plain & simple <b>"),
    ),
    tokens_used=0,
    budget=100,
)


def test_source_label_is_doc_and_span() -> None:
    assert source_label("docs/02-chunking.md", 120, 890) == "docs/02-chunking.md:120-890"


def test_markdown_exact() -> None:
    assert render(SMALL, "markdown") == (
        "~~~ docs/02-chunking.md:120-141 | Guide > Chunking\n"
        "Chunks carry offsets.\n"
        "~~~\n"
        "\n"
        "~~~ notes.txt:0-18\n"
        "Plain & simple <b>\n"
        "~~~\n"
        "\n"
    )


def test_xml_exact() -> None:
    assert render(SMALL, "xml") == (
        '<chunk source="docs/02-chunking.md" start="120" end="141" '
        'header="Guide &gt; Chunking"><![CDATA[Chunks carry offsets.]]></chunk>\n'
        '<chunk source="notes.txt" start="0" end="18"><![CDATA[Plain & simple <b>]]></chunk>\n'
    )


def test_xml_keeps_code_as_written() -> None:
    code = "def f(x: int) -> bool:\n    return x < 3 and x & 1 == 0\n"
    piece = frame_xml("a.py", 0, len(code), "", code)
    assert code in piece and "&gt;" not in piece and "&amp;" not in piece
    assert ET.fromstring(piece).text == code


def test_markdown_framing_cannot_be_mistaken_for_content() -> None:
    text = "# Title\n\n### notes.md:0-10\n\n~~~\ncode\n~~~~~\n"
    piece = frame("doc.md", 0, len(text), "", text, "markdown")
    fence = "~" * 6  # longer than the longest run of ~ inside
    assert piece == f"{fence} doc.md:0-{len(text)}\n{text}\n{fence}\n\n"
    inside = piece.split("\n")[1:-3]
    assert not any(line.startswith(fence) for line in inside)  # no line inside closes it
    assert not piece.startswith("#")  # not a heading in a Markdown document


def test_render_is_the_pieces_in_order() -> None:
    for name in FORMATS.names():
        assert render(SMALL, name) == "".join(render_chunk(c, name) for c in SMALL.chunks)


def test_empty_selection_renders_empty() -> None:
    empty = Selection((), 0, 10)
    assert {render(empty, name) for name in FORMATS.names()} == {""}


def test_markdown_keeps_doc_id_and_header_on_one_line() -> None:
    piece = frame("a\nb", 0, 1, "H1\r\nH2", "x", "markdown")
    assert piece == "~~~ a\\nb:0-1 | H1 H2\nx\n~~~\n\n"  # an id's line break shown as \n


def test_xml_escapes_markup_quotes_and_newlines_in_attributes() -> None:
    piece = frame_xml('d"<&>', 3, 5, 'say "hi" & <go>\n\tnow', "a < b && c > d ]]> \r\n")
    assert piece == (
        '<chunk source="d&quot;&lt;&amp;&gt;" start="3" end="5" '
        'header="say &quot;hi&quot; &amp; &lt;go&gt;&#10;&#9;now">'
        "<![CDATA[a < b && c > d ]]]]><![CDATA[> ]]>&#13;<![CDATA[\n]]></chunk>\n"
    )
    element = ET.fromstring(piece)
    assert element.get("source") == 'd"<&>'
    assert element.get("header") == 'say "hi" & <go>\n\tnow'
    assert element.text == "a < b && c > d ]]> \r\n"


def test_xml_replaces_characters_xml_cannot_hold() -> None:
    assert xml_attr("a\x00b\x1fc") == "a\ufffdb\ufffdc"
    element = ET.fromstring(frame_xml("d", 0, 3, "", "a\x00b"))
    assert element.text == "a\ufffdb"


def test_formats_are_registered_and_unknown_lists_them() -> None:
    assert FORMATS.names() == ["json", "markdown", "xml"]
    with pytest.raises(UnknownNameError, match="unknown format 'yaml': choose one of json, "):
        render(SMALL, "yaml")


_PARTS = [*"ab .,'!?<>&\"\n\r\t é漢0129#-{}", "'s", "\n\n", "  ", "Hello", " world"]
_TEXT = st.lists(st.sampled_from(_PARTS), max_size=20).map("".join)
_ANY_TEXT = st.one_of(_TEXT, st.text(max_size=30))


@settings(max_examples=150, deadline=None)
@given(
    doc_id=_ANY_TEXT,
    header=_ANY_TEXT,
    text=_ANY_TEXT,
    start=st.integers(0, 10**6),
)
def test_xml_and_json_round_trip(doc_id: str, header: str, text: str, start: int) -> None:
    xml_piece = frame(doc_id, start, start + 1, header, text, "xml")
    element = ET.fromstring(xml_piece)
    assert element.get("start") == str(start)
    assert element.get("source") == _xml_clean(doc_id)
    assert element.get("header", "") == _xml_clean(header)
    assert (element.text or "") == _xml_clean(text)
    json_piece = frame(doc_id, start, start + 1, header, text, "json")
    assert json_piece.endswith("\n") and json_piece.count("\n") == 1
    record = json.loads(json_piece)
    assert (record["doc_id"], record["start"], record.get("header", ""), record["text"]) == (
        doc_id,
        start,
        header,
        text,
    )


def _xml_clean(value: str) -> str:
    bad = {*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF}
    return "".join("\ufffd" if ord(ch) in bad else ch for ch in value)


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.tuples(_ANY_TEXT, _ANY_TEXT, _ANY_TEXT), min_size=1, max_size=6),
    name=st.sampled_from(["markdown", "xml", "json"]),
)
def test_piece_token_counts_add_up_exactly(pieces: list[tuple[str, str, str]], name: str) -> None:
    # Texts may start with whitespace or end with punctuation: pieces must still add up.
    framed = [frame(doc, 0, len(text), header, text, name) for doc, header, text in pieces]
    assert all(p[0] in "~<{" and p.endswith("\n") for p in framed)
    assert COUNTER.count("".join(framed)) == sum(COUNTER.count(p) for p in framed)

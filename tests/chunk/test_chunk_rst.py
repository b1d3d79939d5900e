"""The rst chunker: RST section titles by adornment, heading paths, parents, and limits;
and the pdf chunker's page headers."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxselect.chunk import AutoChunker, make_chunker
from ctxselect.chunk.pdf import PdfChunker, page_at
from ctxselect.chunk.rst import RstChunker, headings
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")
DJANGO = Path(__file__).parent / "data" / "custom-management-commands.rst"
TITLE = "How to create custom ``django-admin`` commands"


def chunk(text: str, size: int = 200, overlap: int = 0, doc_id: str = "d.rst") -> list[Chunk]:
    doc = Document(doc_id, text, kind="rst")
    chunks = RstChunker(size, overlap, CL100K).chunk(doc)
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.n_tokens == CL100K.count(c.text) <= size
    return chunks


def levels(text: str) -> list[tuple[int, str]]:
    return [(level, title) for _, _, level, title in headings(text)]


def test_django_style_document_has_its_sections_and_levels() -> None:
    text = DJANGO.read_text(encoding="utf-8")
    assert levels(text) == [
        (1, TITLE),
        (2, "Accepting optional arguments"),
        (2, "Management commands and locales"),
        (2, "Testing"),
        (2, "Overriding commands"),
        (2, "Command objects"),
        (3, "Attributes"),
        (3, "Methods"),
        (3, "``BaseCommand`` subclasses"),
        (3, "Command exceptions"),
    ]


def test_django_style_chunks_carry_heading_paths_and_exact_offsets() -> None:
    text = DJANGO.read_text(encoding="utf-8")
    chunks = chunk(text, size=120, doc_id="howto/custom-management-commands.rst")
    header_of = {c.header for c in chunks}
    assert f"{TITLE} > Accepting optional arguments" in header_of
    assert f"{TITLE} > Command objects > Attributes" in header_of
    assert f"{TITLE} > Command objects > ``BaseCommand`` subclasses" in header_of
    attrs = next(c for c in chunks if "requires_migrations_checks" in c.text)
    assert attrs.header == f"{TITLE} > Command objects > Attributes"
    # a literal block's indented "title" and a quoted literal block open no section
    closepoll = next(c for c in chunks if "Not a title: indented" in c.text)
    assert closepoll.header == TITLE
    quoted = next(c for c in chunks if "> quoted" in c.text)
    assert quoted.header == f"{TITLE} > Accepting optional arguments"
    # the label above a title belongs to that title's section, not to the one before
    starts = {title: start for start, _, _, title in headings(text)}
    assert starts["``BaseCommand`` subclasses"] == text.index(".. _ref-basecommand-subclasses:")
    assert starts["Testing"] == text.index("Testing\n=======")  # no label: the title line
    assert chunks[0].start == 0 and chunks[0].header == TITLE  # no orphan label chunk


def test_parent_id_is_the_span_of_the_smallest_section_holding_the_chunk() -> None:
    text = DJANGO.read_text(encoding="utf-8")
    chunks = chunk(text, size=60, doc_id="d.rst")
    attrs = [c for c in chunks if c.header.endswith("> Attributes")]
    assert len(attrs) >= 2  # the section was cut, every piece keeps its parent
    start = text.index("Attributes\n----------")
    end = text.index("Methods\n-------")
    assert {c.parent_id for c in attrs} == {f"d.rst@{start}:{end}"}


def test_overlined_and_underlined_styles_are_distinct_levels_by_first_appearance() -> None:
    text = (
        "=======\n Title\n=======\n\nintro\n\nPart\n====\n\ntext\n\nSub\n---\n\nmore\n\n"
        "Other part\n==========\n\nlast\n"
    )
    assert levels(text) == [(1, "Title"), (2, "Part"), (3, "Sub"), (2, "Other part")]
    headers = [c.header for c in chunk(text, size=4)]
    assert "Title > Part > Sub" in headers and "Title > Other part" in headers


def test_lines_that_look_like_titles_but_are_not() -> None:
    text = (
        "Intro paragraph\nsecond line\n-----------\n\n"  # underline inside a paragraph
        "Hi\n==\n\n"  # short but as long as the title: a title
        "Too short for it\n==\n\n"  # shorter than the title and < 4: text
        "Four is enough for anything\n~~~~\n\n"  # >= 4: docutils accepts (with a warning)
        "- a bullet\n----------\n\n"  # a list item, not a title
        ".. comment\n----------\n\n"  # explicit markup
        "    Indented\n    ========\n\n"  # block quote
        "-----\n\n"  # a transition
        "=====  =====\nA      B\n=====  =====\n"  # a simple table
    )
    assert levels(text) == [(1, "Hi"), (2, "Four is enough for anything")]


def test_title_after_title_and_at_document_end() -> None:
    text = "Title\n=====\nSub\n---\nbody\n\nLast\n----"
    assert levels(text) == [(1, "Title"), (2, "Sub"), (2, "Last")]
    assert [c.header for c in chunk(text, size=3)][-1] == "Title > Last"


def test_auto_and_factory_use_the_rst_chunker_for_rst_documents() -> None:
    text = DJANGO.read_text(encoding="utf-8")
    doc = Document("d.rst", text, kind="rst")
    rst = RstChunker(150, 0, CL100K).chunk(doc)
    assert AutoChunker(150, 0, CL100K).chunk(doc) == rst
    spec = ChunkSpec(chunker="rst", size=150, tokenizer="cl100k")
    assert make_chunker(spec).chunk(doc) == rst
    as_text = AutoChunker(150, 0, CL100K).chunk(Document("d.rst", text, kind="text"))
    assert all(c.header == "" for c in as_text)  # what .rst files got before: no paths


def test_pdf_chunker_names_the_pages_of_each_chunk() -> None:
    pages = ["First page words. " * 8, "", "Third page. " * 3, "Fourth."]
    text = "\n\f\n".join(pages)
    doc = Document("manuals/pump.pdf", text, kind="pdf")
    chunks = PdfChunker(30, 0, CL100K).chunk(doc)
    for c in chunks:
        assert text[c.start : c.end] == c.text and c.n_tokens <= 30
    assert chunks[0].header == "pump.pdf p. 1"
    assert chunks[-1].header == "pump.pdf p. 3-4"  # small pages merge, the header says so
    assert [page_at(text, i) for i in (0, text.index("Third"), len(text) - 1)] == [1, 3, 4]
    assert AutoChunker(30, 0, CL100K).chunk(doc) == chunks


rst_blocks = st.sampled_from(
    [
        "Title\n=====",
        "=====\nOver\n=====",
        "Sub\n---",
        "Deep\n~~~~",
        "para text with words",
        "para::\n\n    ====\n    lit\n    ====",
        "- item\n-------",
        ".. _label:",
        ".. note::\n\n   body",
        "x\n" * 40,
        "",
    ]
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blocks=st.lists(rst_blocks, max_size=16),
    sep=st.sampled_from(["\n\n", "\n", "\n\n\n"]),
    size=st.sampled_from([4, 16, 60]),
    overlap=st.sampled_from([0, 2]),
)
def test_rst_chunks_keep_offsets_limits_and_cover_the_text(
    blocks: list[str], sep: str, size: int, overlap: int
) -> None:
    text = sep.join(blocks)
    chunks = chunk(text, size=size, overlap=overlap)
    covered = [False] * len(text)
    for c in chunks:
        assert c.text.strip() == c.text != ""
        start, end = (int(x) for x in c.parent_id.removeprefix("d.rst@").split(":"))
        assert start <= c.start and c.end <= end <= len(text)
        covered[c.start : c.end] = [True] * (c.end - c.start)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))
    found = headings(text)
    assert [s for s, *_ in found] == sorted(s for s, *_ in found)
    assert all(0 <= s <= b <= len(text) for s, b, *_ in found)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pages=st.lists(
        st.sampled_from(["", "  ", "short page.", "Word " * 30, "line\n" * 12, "a\fb"]),
        max_size=8,
    ),
    size=st.sampled_from([3, 16, 80]),
)
def test_pdf_chunks_keep_offsets_limits_and_name_their_pages(pages: list[str], size: int) -> None:
    text = "\n\f\n".join(pages)
    doc = Document("m.pdf", text, kind="pdf")
    chunks = PdfChunker(size, 0, CL100K).chunk(doc)
    for c in chunks:
        assert text[c.start : c.end] == c.text and c.n_tokens <= size
        first, last = text.count("\f", 0, c.start) + 1, text.count("\f", 0, c.end) + 1
        assert c.header == (f"m.pdf p. {first}" if first == last else f"m.pdf p. {first}-{last}")
    assert all(text[i].isspace() or any(c.start <= i < c.end for c in chunks) for i in
               range(len(text)))  # fmt: skip

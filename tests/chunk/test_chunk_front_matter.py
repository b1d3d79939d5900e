"""Front matter through the API: after a BOM or zero-width space, TOML ``+++``, CR line ends.

Ingest strips one BOM and turns every line break into ``\\n``; text given to the API
directly is not normalised, so :func:`ctxselect.front_matter.read_front_matter` and the Markdown
chunker must read such text as ingest would read the file, with offsets into it unchanged.
"""

from __future__ import annotations

import pytest

from ctxselect.chunk import MarkdownChunker
from ctxselect.front_matter import read_front_matter
from ctxselect.ingest.fields import front_matter
from ctxselect.tokens import get_counter
from ctxselect.types import Document

CL100K = get_counter("cl100k")
YAML = "---\ntitle: Guide\nstatus: draft\n---\n"
TOML = "+++\ntitle = \"Guide\"\nstatus = 'draft'  # a comment\n+++\n"
BODY = "\n# Install\n\nInstall text.\n"


def chunks_of(text: str) -> list:
    doc = Document("fm.md", text, kind="markdown")
    chunks = MarkdownChunker(64, 0, CL100K).chunk(doc)
    assert all(text[c.start : c.end] == c.text for c in chunks)
    return chunks


@pytest.mark.parametrize("block", [YAML, TOML], ids=["yaml", "toml"])
@pytest.mark.parametrize("lead", ["", "\ufeff", "\u200b", "\ufeff\u200b\u2060"])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_front_matter_is_read_and_in_no_chunk(block: str, lead: str, newline: str) -> None:
    text = lead + (block + BODY).replace("\n", newline)
    found = read_front_matter(text)
    assert found.fields == (("title", "Guide"), ("status", "draft"))
    assert found.end == len(lead + block.replace("\n", newline))
    assert front_matter(text) == found.fields  # ingest's fields come from the same block
    chunks = chunks_of(text)
    assert [c.header for c in chunks] == ["Install"]
    assert chunks[0].start == text.index("# Install")


def test_a_cr_only_text_keeps_its_headings_after_front_matter() -> None:
    text = "---\rtitle: x\r---\r\r# One\r\rfirst\r\r# Two\r\rsecond\r"
    chunks = MarkdownChunker(8, 0, CL100K).chunk(Document("fm.md", text, kind="markdown"))
    assert [c.header for c in chunks] == ["One", "Two"]
    assert [c.text for c in chunks] == ["# One\r\rfirst", "# Two\r\rsecond"]


@pytest.mark.parametrize(
    "text",
    [
        "+++\nJust a line of prose here.\n+++\nbody\n",  # no key = value line
        "+++\n# only a comment\n+++\nbody\n",
        '+++\ntitle = "x"\nbody without a closing fence\n',
        "---\ntitle: x\n+++\nbody\n",  # fences must match
        '+++\ntitle = "x"\n---\nbody\n',
        " ---\ntitle: x\n---\nbody\n",  # whitespace is not an invisible lead
        "\n---\ntitle: x\n---\nbody\n",
        "a---\ntitle: x\n---\nbody\n",
    ],
)
def test_blocks_that_are_not_front_matter_stay_content(text: str) -> None:
    assert read_front_matter(text).end == 0
    assert chunks_of(text)[0].start == len(text) - len(text.lstrip())


def test_toml_tables_and_arrays_give_only_top_level_scalars() -> None:
    text = (
        '+++\ntitle = "Guide"\ntags = ["a", "b"]\nlist = [\n  "x",\n  "y",\n]\n'
        'draft = true\n\n[params]\nauthor = "Ann"\n+++\nbody\n'
    )
    found = read_front_matter(text)
    assert found.end == text.index("body")
    assert found.fields == (("title", "Guide"), ("tags", '["a", "b"]'), ("draft", "true"))

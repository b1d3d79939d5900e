"""The markdown chunker: heading paths, parent sections, merging and splitting."""

from __future__ import annotations

import itertools

from ctxselect.chunk import MarkdownChunker
from ctxselect.chunk.markdown import heading_header, headings, section_tree
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")
USAGE = "\n\n".join(
    f"Usage paragraph {i} explains one more option in some detail." for i in range(12)
)
MD = f"""Preamble text before any heading.

# Guide

Intro to the guide.

## Install

### Linux

Run apt.

### Mac

Run brew.

```
# not a heading: a comment in fenced code
```

## Usage

{USAGE}
"""


def chunk(text: str = MD, size: int = 60, title: str = "Manual", overlap: int = 0) -> list[Chunk]:
    doc = Document("g.md", text, title=title, kind="markdown")
    chunks = MarkdownChunker(size, overlap, CL100K).chunk(doc)
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.n_tokens == CL100K.count(c.text) <= size
    return chunks


def span(text: str, start_marker: str, end_marker: str | None = None) -> str:
    start = text.index(start_marker)
    end = text.index(end_marker) if end_marker else len(text)
    return f"g.md@{start}:{end}"


def test_headings_skip_fenced_code_and_nested_blocks() -> None:
    text = "# A\n\n```\n# code\n```\n\n- # in a list\n\nB\n=\n\n## C ##\n"
    assert [(level, title) for _, level, title in headings(text)] == [(1, "A"), (1, "B"), (2, "C")]
    offsets = [offset for offset, _, _ in headings(text)]
    assert [text[o : o + 3] for o in offsets] == ["# A", "B\n=", "## "]


def test_section_tree_nests_by_level() -> None:
    root = section_tree(MD)
    assert [c.path for c in root.children] == [("Guide",)]
    guide = root.children[0]
    assert [c.path for c in guide.children] == [("Guide", "Install"), ("Guide", "Usage")]
    assert [c.path[-1] for c in guide.children[0].children] == ["Linux", "Mac"]
    assert guide.end == len(MD) and root.own_end == MD.index("# Guide")


def test_heading_header_prefixes_the_title_once() -> None:
    assert heading_header("Manual", ("Guide", "Install")) == "Manual > Guide > Install"
    assert heading_header("Guide", ("Guide", "Install")) == "Guide > Install"
    assert heading_header("", ("Guide",)) == "Guide"
    assert heading_header("Manual", ()) == "Manual"


def test_a_document_that_fits_is_one_chunk_with_the_document_as_parent() -> None:
    (only,) = chunk(size=10_000)
    assert only.text == MD.strip()
    assert only.header == "Manual"
    assert only.parent_id == f"g.md@0:{len(MD)}"


def test_preamble_small_siblings_and_large_sections() -> None:
    chunks = chunk(size=60)
    by_text = {c.text.split("\n")[0]: c for c in chunks}
    # Text before the first heading is its own section, under the document.
    preamble = by_text["Preamble text before any heading."]
    assert (preamble.header, preamble.parent_id) == ("Manual", f"g.md@0:{len(MD)}")
    # The guide's intro and its small Install subsection merge under the common parent.
    merged = by_text["# Guide"]
    assert merged.text.endswith("```")
    assert "### Mac" in merged.text and "## Usage" not in merged.text
    assert merged.header == "Manual > Guide"
    assert merged.parent_id == span(MD, "# Guide")
    # Usage is larger than the size: cut into pieces that all keep its path and parent.
    usage = [c for c in chunks if c.header == "Manual > Guide > Usage"]
    assert len(usage) > 2
    assert usage[0].text.startswith("## Usage")
    assert all(c.parent_id == span(MD, "## Usage") for c in usage)
    assert chunks == sorted(chunks, key=lambda c: c.start)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_a_subsection_that_fits_alone_is_its_own_parent() -> None:
    chunks = chunk(size=30)  # Install is 30 tokens: it cannot merge with the intro
    install = next(c for c in chunks if c.text.startswith("## Install"))
    assert install.header == "Manual > Guide > Install"
    assert install.parent_id == span(MD, "## Install", "## Usage")
    assert install.text.endswith("```")


def test_small_sibling_sections_merge_up_to_the_size() -> None:
    body = "\n\n".join(f"## Part {i}\n\nShort body {i}." for i in range(6))
    text = f"# Top\n\n{body}\n\n## Big\n\n" + "Long filler sentence here. " * 40
    chunks = chunk(text, size=30, title="")
    parts = [c for c in chunks if c.text.startswith("# Top")]
    assert len(parts) == 1  # "# Top" plus as many parts as fit in 30 tokens
    merged = parts[0]
    assert merged.header == "Top" and merged.parent_id == span(text, "# Top")
    assert "## Part 1" in merged.text
    following = chunks[1]
    assert following.text.startswith("## Part")
    assert following.header == "Top"  # still a group of siblings: the parent's path
    total = sum(1 for c in chunks if "## Part" in c.text)
    assert total < 6  # merged rather than one chunk per part
    big = [c for c in chunks if c.header == "Top > Big"]
    assert len(big) > 1 and all(c.parent_id == span(text, "## Big") for c in big)


def test_overlap_applies_inside_split_sections() -> None:
    chunks = [c for c in chunk(size=40, overlap=10) if c.header.endswith("Usage")]
    assert len(chunks) > 2
    assert all(b.start < a.end for a, b in itertools.pairwise(chunks))


def test_headings_without_title_add_nothing_to_the_path() -> None:
    text = "# A\n\n##\n\nbody\n\n### B\n\n" + "word " * 80
    chunks = chunk(text, size=30, title="")
    assert {c.header for c in chunks} == {"A", "A > B"}

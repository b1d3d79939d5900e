"""The markdown chunker: heading paths, parent sections, merging and splitting."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ctxselect.chunk import MarkdownChunker
from ctxselect.chunk.markdown import front_matter_end, heading_header, headings, section_tree
from ctxselect.front_matter import read_front_matter
from ctxselect.ingest.fields import front_matter
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
    text = "# A\n\n```\n# code\n```\n\n- # in a list\n\nB\n=\n\n## C ##\nbody\n"
    found = headings(text)
    assert [(level, title) for _, _, level, title in found] == [(1, "A"), (1, "B"), (2, "C")]
    assert [text[start:body] for start, body, _, _ in found] == ["# A\n", "B\n=\n", "## C ##\n"]


def test_section_tree_nests_by_level() -> None:
    root = section_tree(MD)
    assert [c.path for c in root.children] == [("Guide",)]
    guide = root.children[0]
    assert [c.path for c in guide.children] == [("Guide", "Install"), ("Guide", "Usage")]
    assert [c.path[-1] for c in guide.children[0].children] == ["Linux", "Mac"]
    assert guide.end == len(MD) and root.own_end == MD.index("# Guide")
    assert guide.children[0].parent is guide and root.parent is None


def test_heading_header_prefixes_the_title_once() -> None:
    assert heading_header("Manual", ("Guide", "Install")) == "Manual > Guide > Install"
    assert heading_header("Guide", ("Guide", "Install")) == "Guide > Install"
    assert heading_header("", ("Guide",)) == "Guide"
    assert heading_header("Manual", ()) == "Manual"


def test_cut_at_headings_with_paths_and_parents() -> None:
    chunks = chunk(size=10_000)  # everything would fit: still one chunk per section
    assert [(c.text.split("\n")[0], c.header, c.parent_id) for c in chunks] == [
        # Text before the first heading is its own section, under the document.
        ("Preamble text before any heading.", "Manual", f"g.md@0:{len(MD)}"),
        # A section's own text; its parent is the whole section, subsections included.
        ("# Guide", "Manual > Guide", span(MD, "# Guide")),
        # A bare heading joins its subsections: the siblings Linux and Mac merge under it.
        ("## Install", "Manual > Guide > Install", span(MD, "## Install", "## Usage")),
        ("## Usage", "Manual > Guide > Usage", span(MD, "## Usage")),
    ]
    install = chunks[2].text
    assert "### Linux" in install and "### Mac" in install and install.endswith("```")
    assert chunks[1].text == "# Guide\n\nIntro to the guide."


def test_the_title_is_not_repeated_when_it_is_the_first_heading() -> None:
    headers = [c.header for c in chunk(size=10_000, title="Guide")]
    assert headers == ["Guide", "Guide", "Guide > Install", "Guide > Usage"]


def test_large_sections_are_split_and_keep_their_path_and_parent() -> None:
    chunks = chunk(size=30)
    usage = [c for c in chunks if c.header == "Manual > Guide > Usage"]
    assert len(usage) > 2
    assert usage[0].text.startswith("## Usage")
    assert all(c.parent_id == span(MD, "## Usage") for c in usage)
    assert "".join(c.text for c in usage).replace("\n", "") == MD[MD.index("## Usage") :].replace(
        "\n", ""
    )
    assert chunks == sorted(chunks, key=lambda c: c.start)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_a_section_with_text_does_not_merge_with_its_subsections() -> None:
    text = (
        "# G\n\nIntro.\n\n## Install\n\nRun it.\n\n### Linux\n\nUse apt.\n\n## Usage\n\nCall it.\n"
    )
    chunks = chunk(text, size=500, title="")
    assert [(c.header, c.parent_id) for c in chunks] == [
        ("G", span(text, "# G")),
        ("G > Install", span(text, "## Install", "## Usage")),
        ("G > Install > Linux", span(text, "### Linux", "## Usage")),
        ("G > Usage", span(text, "## Usage")),
    ]


def test_a_bare_heading_joins_its_first_subsections() -> None:
    text = "# G\n\n## Install\n\nRun it.\n\n### Linux\n\nUse apt.\n"
    chunks = chunk(text, size=500, title="")
    assert [(c.text, c.header) for c in chunks] == [
        ("# G\n\n## Install\n\nRun it.", "G"),
        ("### Linux\n\nUse apt.", "G > Install > Linux"),
    ]


def test_small_sibling_sections_merge_up_to_the_size() -> None:
    body = "\n\n".join(f"## Part {i}\n\nShort body {i}." for i in range(6))
    text = f"# Top\n\n{body}\n\n## Big\n\n" + "Long filler sentence here. " * 40
    chunks = chunk(text, size=30, title="")
    parts = [c for c in chunks if "## Part" in c.text]
    assert 1 < len(parts) < 6  # merged, but never above 30 tokens
    assert parts[0].text.startswith("# Top\n\n## Part 0") and "## Part 1" in parts[0].text
    for c in parts:
        if c.text.count("## Part") > 1:  # a merged run takes the common parent
            assert (c.header, c.parent_id) == ("Top", span(text, "# Top"))
        else:  # a part left alone keeps its own path
            assert c.header == "Top > " + c.text.split("\n")[0].removeprefix("## ")
    assert sum(c.text.count("## Part") for c in parts) == 6
    big = [c for c in chunks if c.header == "Top > Big"]
    assert len(big) > 1 and all(c.parent_id == span(text, "## Big") for c in big)
    assert "## Big" not in parts[-1].text  # Big is a sibling, but too large to merge


def test_merging_stops_at_the_size_and_at_other_parents() -> None:
    # A's own text is more than a tiny opener (<= 4 tokens), which would join ### x
    text = "## A\n\nalpha, the first letter\n\n### x\n\nex\n\n### y\n\nwhy\n\n## B\n\nbeta\n"
    chunks = chunk(text, size=500, title="")
    assert [c.text.split("\n")[0] for c in chunks] == ["## A", "### x", "## B"]
    assert chunks[1].text == "### x\n\nex\n\n### y\n\nwhy" and chunks[1].header == "A"
    text = text.replace(", the first letter", "")  # 4 tokens a section: none fits another
    tight = chunk(text, size=CL100K.count("### x\n\nex"), title="")
    assert [c.header for c in tight] == ["A", "A > x", "A > y", "B"]


def test_overlap_applies_inside_split_sections() -> None:
    chunks = [c for c in chunk(size=40, overlap=10) if c.header.endswith("Usage")]
    assert len(chunks) > 2
    assert all(b.start < a.end for a, b in itertools.pairwise(chunks))


def test_headings_without_title_add_nothing_to_the_path() -> None:
    text = "# A\n\n##\n\nbody\n\n### B\n\n" + "word " * 80
    chunks = chunk(text, size=30, title="")
    assert {c.header for c in chunks} == {"A", "A > B"}


def test_front_matter_is_in_no_chunk_and_keeps_the_heading_path():
    text = (
        "---\ntitle: Guide\nstatus: draft\n---\n\n"
        "# Install\n\nInstall text.\n\n## Linux\n\nLinux steps.\n"
    )
    chunks = MarkdownChunker(counter=CL100K).chunk(Document("fm.md", text))
    assert [c.header for c in chunks] == ["Install", "Install > Linux"]
    assert chunks[0].start == text.index("# Install")
    assert all(text[c.start : c.end] == c.text and "status" not in c.text for c in chunks)
    assert headings(text)[0][2:] == (1, "Install")  # not a setext heading "title: Guide ..."
    assert MarkdownChunker(counter=CL100K).chunk(Document("fm.md", text[:35])) == []


def test_a_rule_before_prose_is_not_front_matter():
    text = "---\nJust a thought, not metadata.\n---\n\nMore prose.\n"
    chunks = MarkdownChunker(counter=CL100K).chunk(Document("hr.md", text))
    assert chunks[0].start == 0 and any("Just a thought" in c.text for c in chunks)


def test_a_rule_then_a_heading_and_a_list_is_content_not_front_matter():
    text = "---\n# Release notes\n- fixed the parser\n- faster index\n---\n\nThanks to everyone.\n"
    chunks = MarkdownChunker(counter=CL100K).chunk(Document("rule.md", text))
    kept = "".join(c.text for c in chunks)
    assert front_matter_end(text) == 0
    assert "Release notes" in kept and "faster index" in kept and "Thanks" in kept
    assert [c.header for c in chunks if "Release notes" in c.text] == ["Release notes"]


@pytest.mark.parametrize(
    "text",
    [
        "---\n# Release notes\n- fixed the parser\n---\n\nbody\n",
        "---\n# only a comment\n---\nbody\n",
        "---\n- a\n- b\n---\nbody\n",
        "---\ntitle: Guide\n---\nbody\n",
        "---\ntags:\n  - a\n  - b\n---\nbody\n",
        "---\ntitle: x\nJust prose here.\n---\nbody\n",
        "---\nkind: note\n...\nbody\n",
    ],
)
def test_the_chunker_hides_a_block_exactly_when_ingest_reads_it_as_front_matter(text):
    block = read_front_matter(text)
    hidden = front_matter_end(text)
    assert hidden == block.end
    if front_matter(text):  # fields were read: the block is in no chunk
        assert hidden > 0
    chunks = MarkdownChunker(counter=CL100K).chunk(Document("fm.md", text))
    assert all(c.start >= hidden for c in chunks)
    assert (hidden == 0) == any(c.start < text.index("body") for c in chunks)


class CountingCounter:
    """cl100k, remembering how many characters ``count`` was asked to read."""

    name = "cl100k"

    def __init__(self) -> None:
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return CL100K.count(text)


def dropping_one_at_a_time(chunker: MarkdownChunker, doc: Document) -> list[tuple]:
    """The rows as the chunker made them before: the longest run, shrunk one unit at a time."""
    text, units, out, i = doc.text, chunker._units(doc.text), [], 0
    while i < len(units):
        unit = units[i]
        if unit.n_tokens > chunker.size:
            out.extend(p[:3] for p in chunker.splitter.split(text, unit.start, unit.end))
            i += 1
            continue
        key = unit.key or object()  # no key: merges with nothing
        siblings = itertools.takewhile(lambda u, key=key: u.key is key, units[i + 1 :])
        sums = itertools.accumulate((u.n_tokens for u in siblings), initial=unit.n_tokens)
        longest = i + sum(1 for total in sums if total <= chunker.size)
        exact = (
            (s, CL100K.count(text[unit.start : units[s - 1].end])) for s in range(longest, i, -1)
        )
        stop, n = next(((s, n) for s, n in exact if n <= chunker.size), (i + 1, unit.n_tokens))
        out.append((unit.start, units[stop - 1].end, n))
        i = stop
    return out


MANY = "# Top\n\n" + "".join(f"## H{i}\n\nalpha beta {i}\n\n" for i in range(3000))


@pytest.mark.parametrize("size", [8, 100, 1000, 8192, 20000])
def test_runs_of_many_small_sections_are_cut_as_before(size: int) -> None:
    chunker = MarkdownChunker(size, 0, CL100K)
    guide = sorted(Path(__file__).parents[2].glob("docs/0*.md"))[0].read_text(encoding="utf-8")
    doc = Document("many.md", guide + "\n\n" + MANY)
    got = [(c.start, c.end, c.n_tokens) for c in chunker.chunk(doc)]
    assert got == dropping_one_at_a_time(chunker, doc)


def test_a_large_size_reads_the_text_a_few_times_not_once_per_section() -> None:
    counter = CountingCounter()
    chunks = MarkdownChunker(20000, 0, counter).chunk(Document("many.md", MANY))
    assert len(chunks) == 2 and chunks[-1].end == len(MANY.rstrip())
    assert counter.chars < 30 * len(MANY)  # 12x; dropping one section at a time: 140x


def test_a_heading_written_on_several_lines_is_a_one_line_header() -> None:
    # a setext heading may span lines; the header is printed on one line above the chunk
    text = "Title line one\n  line two\n===\n\nBody text under the heading."
    (only,) = MarkdownChunker(64).chunk(Document("d.md", text, kind="markdown"))
    assert only.header == "Title line one line two"
    assert only.text == text

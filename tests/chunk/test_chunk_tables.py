"""A long GFM table cut into several chunks keeps its column names in each chunk's header.

Chunks stay exact slices of the document, so the header row and the delimiter row of a
table travel in the ``header`` field (after the heading path, on its one line) of every
chunk that starts inside the table after them; ``n_tokens`` still counts the text only,
as it does with heading paths.
"""

from __future__ import annotations

import pytest

from ctxselect.budget.render import frame
from ctxselect.chunk import make_chunker
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")

# GitHub-flavoured tables as READMEs write them: alignment colons, inline code, an
# escaped pipe inside a cell, links; and one without outer pipes.
HEAD = "| Model | Tokenizer | `size` | Recall@10 | nDCG@10 |"
DELIMITER = "|:------|:---------:|-------:|----------:|--------:|"
ROWS = "\n".join(
    f"| [bm25-{i}](https://example.org/{i}) | `cl100k` \\| `o200k` | {64 * (i % 8 + 1)} "
    f"| {0.5 + i / 200:.3f} | {0.4 + i / 250:.3f} |"
    for i in range(60)
)
BARE_HEAD = "Corpus | Documents | Queries"
BARE_DELIMITER = "--- | ---: | ---:"
BARE_ROWS = "\n".join(f"collection-{i} | {1000 + 37 * i} | {50 + i}" for i in range(50))
DOC = f"""# Benchmarks

How the retrievers compare on the shared collections.

## Results

{HEAD}
{DELIMITER}
{ROWS}

Numbers from one run on a laptop.

## Collections

{BARE_HEAD}
{BARE_DELIMITER}
{BARE_ROWS}
"""


def chunk(text: str, size: int, overlap: int = 0, chunker: str = "markdown") -> list[Chunk]:
    spec = ChunkSpec(chunker=chunker, size=size, overlap=overlap)
    kind = "rst" if chunker == "rst" else "markdown"
    chunks = make_chunker(spec).chunk(Document("bench.md", text, title="Bench", kind=kind))
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.n_tokens == CL100K.count(c.text) <= size  # the header is not counted
    return chunks


def table_of(text: str, c: Chunk) -> str:
    """Which table the chunk starts in after its first character: "results", "collections"
    or "" (an overlap may start the chunk inside the delimiter row)."""
    rows_at = text.index(HEAD), text.index(ROWS) + len(ROWS)
    bare_at = text.index(BARE_HEAD), text.index(BARE_ROWS) + len(BARE_ROWS)
    if rows_at[0] < c.start < rows_at[1]:
        return "results"
    return "collections" if bare_at[0] < c.start < bare_at[1] else ""


@pytest.mark.parametrize("overlap", [0, 8])
@pytest.mark.parametrize("size", [64, 128])
def test_every_chunk_inside_a_table_has_its_header_row(size: int, overlap: int) -> None:
    chunks = chunk(DOC, size, overlap)
    inside = [(c, table_of(DOC, c)) for c in chunks]
    assert sum(1 for _, t in inside if t == "results") >= 3
    assert sum(1 for _, t in inside if t == "collections") >= 2
    for c, table in inside:
        if table == "results":
            assert c.header == f"Bench > Benchmarks > Results > {HEAD} {DELIMITER}"
        elif table == "collections":
            assert c.header == f"Bench > Benchmarks > Collections > {BARE_HEAD} {BARE_DELIMITER}"
        else:
            assert "|" not in c.header, c  # the table's own first chunk shows its head


def test_the_header_stays_on_one_line_and_frames_with_the_chunk() -> None:
    inside = [c for c in chunk(DOC, 64) if table_of(DOC, c) == "results"]
    framed = frame(
        inside[0].doc_id,
        inside[0].start,
        inside[0].end,
        inside[0].header,
        inside[0].text,
        "markdown",
    )
    first_line = framed.split("\n", 1)[0]
    assert "\n" not in inside[0].header
    assert first_line.endswith(f"| Bench > Benchmarks > Results > {HEAD} {DELIMITER}")


def test_a_table_under_no_heading_and_no_title_has_its_head_alone() -> None:
    text = f"{HEAD}\n{DELIMITER}\n{ROWS}\n"
    doc = Document("t.md", text, kind="markdown")
    chunks = make_chunker(ChunkSpec(chunker="markdown", size=64)).chunk(doc)
    assert len(chunks) > 3
    assert chunks[0].header == ""
    assert {c.header for c in chunks[1:]} == {f"{HEAD} {DELIMITER}"}


def test_a_chunk_starting_after_the_table_has_no_table_head() -> None:
    text = f"# T\n\n{HEAD}\n{DELIMITER}\n{ROWS}\n\n" + "\n\n".join(
        f"Closing paragraph {i} says what the numbers mean." for i in range(30)
    )
    chunks = chunk(text, 64)
    after = [c for c in chunks if c.start > text.index(ROWS) + len(ROWS)]
    assert after and all(c.header == "Bench > T" for c in after)


def test_pipes_in_fenced_code_are_no_table() -> None:
    text = f"# T\n\n```\n{HEAD}\n{DELIMITER}\n{ROWS}\n```\n"
    assert {c.header for c in chunk(text, 64)} == {"Bench > T"}


def test_rst_text_has_no_markdown_tables() -> None:
    text = f"Title\n=====\n\n{HEAD}\n{DELIMITER}\n{ROWS}\n"
    assert {c.header for c in chunk(text, 64, chunker="rst")} == {"Bench > Title"}

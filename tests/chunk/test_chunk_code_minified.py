"""A minified file (one huge line, a deep tree) is cut in time linear in its length.

Two costs were quadratic or repeated: every chunk's header counted line breaks from the
file's start (30 s for a 1.25 MB minified file at size 7), and every level of the tree
was counted whole although only the pieces that can fit need a count. The cuts are the
same as before (checked on this repo's and the stdlib's files before the change).
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tree_sitter", reason="the code extra: pip install 'ctxselect[code]'")

from ctxselect.chunk import CodeChunker, TokenChunker
from ctxselect.chunk.spans import count_up_to
from ctxselect.tokens import get_counter
from ctxselect.types import Document

CL100K = get_counter("cl100k")
MINIFIED = (
    "!function(){"
    + "".join(f'var a{i}=function(b){{return b*{i}+"{i * 7919}"}};' for i in range(3000))
    + "}();"
)


class Watched(str):
    """A text that remembers how many characters ``count`` and ``find`` scanned."""

    scanned = 0

    def count(self, sub, start=0, end=None):  # type: ignore[override]
        Watched.scanned += (len(self) if end is None else min(end, len(self))) - (start or 0)
        return super().count(sub, start, end)

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        Watched.scanned += (len(self) if end is None else min(end, len(self))) - (start or 0)
        return super().find(sub, start, end)


class ReadingCounter:
    """cl100k, remembering how many characters it was asked to count."""

    name = "cl100k"
    max_token_chars = CL100K.max_token_chars

    def __init__(self) -> None:
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return CL100K.count(text)


@pytest.mark.parametrize("size", [7, 64, 512])
def test_headers_do_not_rescan_the_file_for_every_chunk(size: int) -> None:
    Watched.scanned = 0
    text = Watched(MINIFIED)
    chunks = CodeChunker(size, 0, CL100K).chunk(Document("big.min.js", text, kind="code"))
    assert len(chunks) > 20
    assert Watched.scanned <= len(text)  # before: twice the offset of every chunk


def test_a_deep_tree_is_not_counted_whole_at_every_level() -> None:
    counter = ReadingCounter()
    chunks = CodeChunker(64, 0, counter).chunk(Document("big.min.js", MINIFIED, kind="code"))
    assert "".join(c.text for c in chunks) == MINIFIED
    assert counter.chars <= 2 * len(MINIFIED)  # before: 7 times (each level whole)


def test_header_lines_are_counted_as_before() -> None:
    text = "\n".join(f"def f{i}(x):\n    '''Doc {i}.'''\n    return x + {i}\n" for i in range(60))
    doc = Document("pkg/many.py", text, kind="code")
    for c in CodeChunker(40, 0, CL100K).chunk(doc):
        found = re.search(r"\(lines (\d+)-(\d+)\)$", c.header)
        assert found is not None
        first = text.count("\n", 0, c.start) + 1
        assert (int(found[1]), int(found[2])) == (first, first + c.text.count("\n"))


def test_count_up_to_skips_only_spans_that_cannot_fit() -> None:
    text = "word " * 2000
    longest = CL100K.max_token_chars
    spans = [(0, 10), (0, 4 * longest), (0, 4 * longest + 1), (0, len(text))]
    assert count_up_to(CL100K, 4, text, spans) == [
        CL100K.count(text[:10]),
        CL100K.count(text[: 4 * longest]),
        5,
        5,
    ]
    assert CL100K.count(text[: 4 * longest + 1]) > 4  # the skipped span really is above
    plain = ReadingCounter()
    del ReadingCounter.max_token_chars  # a counter without the bound: everything counted
    try:
        assert count_up_to(plain, 4, text, spans[-1:]) == [CL100K.count(text)]
    finally:
        ReadingCounter.max_token_chars = CL100K.max_token_chars


def test_the_tokens_chunker_cuts_the_same_with_or_without_the_bound() -> None:
    class Plain:
        name = "cl100k"
        count = staticmethod(CL100K.count)

    doc = Document("big.min.js", MINIFIED[:20000])
    with_bound = TokenChunker(64, 8, CL100K).chunk(doc)
    assert with_bound == TokenChunker(64, 8, Plain()).chunk(doc)

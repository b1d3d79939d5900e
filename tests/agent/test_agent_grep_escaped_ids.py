"""A document id holding a control character is escaped in grep text, as the CLI does."""

from __future__ import annotations

from ctxselect.agent.grep import GrepBlock, GrepMatch
from ctxselect.agent.grep_text import grep_lines


def _block(doc_id: str) -> GrepBlock:
    match = GrepMatch(line=1, start=0, end=6)
    return GrepBlock(doc_id, 0, 12, 1, 1, (match,), ("c",), 3, "needle here\n")


def test_a_newline_in_a_doc_id_stays_on_one_line() -> None:
    blocks = [_block("two\nlines.md")]
    assert grep_lines(blocks, with_file=True) == ("two\\nlines.md\ntwo\\nlines.md:1: needle here\n")
    assert grep_lines(blocks, with_file=False) == "two\\nlines.md\n1:needle here\n"


def test_a_plain_doc_id_is_unchanged() -> None:
    assert grep_lines([_block("a.md")], with_file=True) == "a.md\na.md:1: needle here\n"

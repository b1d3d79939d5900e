"""Budget framing escapes a control character in a document id, as the CLI prints ids."""

from __future__ import annotations

from ctxselect.budget.render import frame_markdown, one_line


def test_a_newline_in_a_doc_id_is_escaped_in_the_markdown_frame() -> None:
    piece = frame_markdown("two\nlines.md", 0, 5, "", "hello")
    assert piece == "~~~ two\\nlines.md:0-5\nhello\n~~~\n\n"


def test_one_line_escapes_only_what_is_not_printable() -> None:
    assert one_line("docs/a b.md") == "docs/a b.md"
    assert one_line("a\tb\r\nc") == "a\\tb\\r\\nc"


def test_agent_roots_uses_the_base_folder_ingest_exports() -> None:
    import inspect

    from ctxselect.agent import roots

    assert "def base_folder" not in inspect.getsource(roots)  # one copy: ingest's

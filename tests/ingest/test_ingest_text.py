"""Normalisation, binary sniffing and HTML conversion as units, with property tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxselect.ingest.html import html_to_text
from ctxselect.ingest.kinds import SNIFF, kind_of
from ctxselect.ingest.text import SNIFF_BYTES, decode, is_binary, normalize


@given(st.text())
def test_normalize_leaves_no_carriage_return_and_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert "\r" not in once
    assert normalize(once) == once or once.startswith("\ufeff")  # only one BOM is stripped


@given(st.text(alphabet=st.characters(blacklist_characters="\r\ufeff")))
def test_normalize_changes_nothing_else(text: str) -> None:
    assert normalize(text) == text


def test_normalize_rules() -> None:
    assert normalize("\ufeffa\r\nb\rc\n") == "a\nb\nc\n"
    assert normalize("a\ufeffb") == "a\ufeffb"  # only a leading BOM is dropped


def test_is_binary() -> None:
    assert not is_binary(b"")
    assert not is_binary("plain text, accents é, CJK 漢字\n".encode() * 500)
    assert is_binary(b"abc\x00def")
    assert is_binary(bytes(range(256)) * 4)
    # A multi-byte character cut by the sniff window is not evidence of binary data.
    text = ("é" * SNIFF_BYTES).encode()
    assert not is_binary(text[: SNIFF_BYTES + 1])


def test_decode_reports_replacement() -> None:
    assert decode(b"ok") == ("ok", False)
    assert decode(b"a\xffb") == ("a\ufffdb", True)


def test_kind_of() -> None:
    assert kind_of("README.MD") == "markdown"
    assert kind_of("main.RS") == "code"
    assert kind_of("Dockerfile.dev") == "code"
    assert kind_of("CMakeLists.txt") == "code"
    assert kind_of("notes") == SNIFF
    assert kind_of("corpus.jsonl") == "beir"
    assert kind_of("photo.jpeg") is None


def test_html_pre_is_kept_and_breaks_become_lines() -> None:
    title, text = html_to_text(
        "<body><p>a<br>b</p><pre>def f():\n    return 1</pre>"
        "<table><tr><td>x</td><td>y</td></tr>\n<tr><td>z</td></tr></table></body>"
    )
    assert title == ""
    assert text == "a\nb\n\ndef f():\n    return 1\n\nx y\nz"


def test_html_deep_nesting_does_not_recurse() -> None:
    _, text = html_to_text("<div>" * 5000 + "deep" + "</div>" * 5000)
    assert text == "deep"


@pytest.mark.parametrize("cr", ["&#13;", "&#x0D;", "&#13;\n"])
def test_html_pre_carriage_return_entities_become_newlines(cr: str) -> None:
    _, text = html_to_text(f"<body><pre>line1{cr}line2{cr}line3</pre><p>a{cr}b</p></body>")
    assert "\r" not in text
    assert text == "line1\nline2\nline3\n\na b"

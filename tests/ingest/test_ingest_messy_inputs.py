"""Messy real folders: UTF-16 files from Windows tools, legacy HTML pages in a declared
charset, repeated ids in a walked BEIR export, and damaged PDFs whose pypdf log lines must
not leak onto stderr."""

from __future__ import annotations

import codecs
import json
import logging
import unicodedata
from pathlib import Path

import pytest

from _support.pdfs import make_pdf
from ctxselect.chunk import make_chunker
from ctxselect.config import ChunkSpec
from ctxselect.errors import InputError
from ctxselect.ingest import load_paths
from ctxselect.ingest.text import declared_charset, to_text

TEXT = "Café naïve — “quoted”\r\nsecond line\rthird 漢字 😀\n"
WANT = "Café naïve — “quoted”\nsecond line\nthird 漢字 😀\n"


@pytest.mark.parametrize(
    ("bom", "codec"),
    [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")],
)
def test_utf16_files_with_a_bom_load_as_text_with_exact_offsets(
    tmp_path: Path, bom: bytes, codec: str
) -> None:
    (tmp_path / "notes.txt").write_bytes(bom + TEXT.encode(codec))
    (tmp_path / "page.html").write_bytes(bom + "<p>a &amp; b</p>".encode(codec))
    result = load_paths(tmp_path)
    docs = {d.doc_id: d for d in result.documents}
    assert result.report.binary == 0, result.report.summary()
    assert docs["notes.txt"].text == WANT
    assert docs["page.html"].text == "a & b"
    assert result.report.decoded_with_replacement == 0
    doc = docs["notes.txt"]
    for chunk in make_chunker(ChunkSpec(chunker="tokens", size=4)).chunk(doc):
        assert doc.text[chunk.start : chunk.end] == chunk.text


PAGE = (
    "<html><head>{meta}<title>Café</title></head><body><p>Crème brûlée, “déjà vu”</p></body></html>"
)


@pytest.mark.parametrize(
    ("meta", "codec"),
    [
        ('<meta charset="iso-8859-1">', "cp1252"),  # browsers read the label as windows-1252
        ('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">', "cp1252"),
        ("<meta charset=ISO-8859-15>", "iso8859-15"),
    ],
)
def test_a_legacy_html_page_loads_in_the_charset_it_declares(
    tmp_path: Path, meta: str, codec: str
) -> None:
    text = PAGE.format(meta=meta).replace("“", '"').replace("”", '"')
    if codec == "cp1252":
        text = PAGE.format(meta=meta)  # the curly quotes exist only in windows-1252
    (tmp_path / "page.html").write_bytes(text.encode(codec))
    result = load_paths(tmp_path)
    [doc] = result.documents
    assert doc.title == "Café"
    assert doc.text.startswith("Crème brûlée, ") and "\ufffd" not in doc.text
    assert result.report.decoded_with_replacement == 0, result.report.summary()


def test_a_declared_charset_is_used_only_where_utf8_fails(tmp_path: Path) -> None:
    # a UTF-8 page that mislabels itself reads as UTF-8, not as mojibake
    utf8 = PAGE.format(meta='<meta charset="iso-8859-1">').encode()
    assert to_text(utf8, html=True) == (utf8.decode(), False)
    # an XML declaration names the charset of an XHTML page
    greek = '<?xml version="1.0" encoding="ISO-8859-7"?><html><body>Καλημέρα</body></html>'
    assert to_text(greek.encode("iso8859-7"), html=True) == (greek, False)
    # the five bytes windows-1252 leaves undefined read as C1 controls, as in browsers
    holes = b'<meta charset="windows-1252"><p>caf\xe9 \x81\x9d</p>'
    assert to_text(holes, html=True) == ('<meta charset="windows-1252"><p>café \x81\x9d</p>', False)
    # a plain text file never looks for a declaration
    assert to_text(holes) == (holes.decode("utf-8", "replace"), True)


@pytest.mark.parametrize(
    "meta",
    [
        '<meta charset="no-such-charset">',  # unknown to Python
        '<meta charset="utf-16">',  # what ASCII bytes cannot truthfully declare
        '<meta charset="utf-8">',  # declares UTF-8 but is not
    ],
)
def test_a_page_that_fits_no_declaration_is_decoded_with_replacement_and_named(
    tmp_path: Path, meta: str
) -> None:
    raw = f"<html><head>{meta}</head><body><p>caf\xe9</p></body></html>".encode("latin-1")
    (tmp_path / "page.html").write_bytes(raw)
    result = load_paths(tmp_path)
    assert result.documents[0].text == "caf\ufffd"
    assert result.report.replaced_files == (str(tmp_path / "page.html"),)


def test_declared_charset_reads_only_the_prescan_window() -> None:
    late = b"<html>" + b" " * 1024 + b'<meta charset="iso-8859-2">'
    assert declared_charset(late) is None
    assert declared_charset(b"<META CHARSET='Shift_JIS'>") == "cp932"
    assert declared_charset(b'<meta charset="us-ascii">') == "cp1252"  # as browsers read it
    assert declared_charset(b"<p>charset=latin1</p>") is None  # only in a meta tag


def test_only_valid_utf16_text_behind_a_bom_loads() -> None:
    odd = codecs.BOM_UTF16_LE + "ok".encode("utf-16-le") + b"\x41"  # odd byte count
    assert to_text(odd) is None  # not UTF-16: binary, as before
    assert to_text(codecs.BOM_UTF16_LE + bytes(range(256)) * 8) is None
    utf32 = codecs.BOM_UTF32_LE + "text".encode("utf-32-le")  # not UTF-16: NULs
    assert to_text(utf32) is None
    assert to_text(b"plain \xff") == ("plain \ufffd", True)
    assert to_text(b"a\x00b") is None


def _jsonl(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_repeated_id_in_a_walked_corpus_is_a_bad_line_not_a_failed_index(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("other file\n", encoding="utf-8")
    path = tmp_path / "export.jsonl"
    records = [
        {"_id": "a", "title": "A", "text": "first a"},
        {"_id": "b", "text": "only b"},
        {"_id": "a", "title": "A again", "text": "second a"},
    ]
    path.write_text(_jsonl(records), encoding="utf-8")
    result = load_paths(tmp_path)
    texts = {d.doc_id: d.text for d in result.documents}
    assert texts == {"a": "first a", "b": "only b", "notes.txt": "other file\n"}
    [(named, why)] = result.report.unreadable
    assert named == str(path)
    assert why.startswith("1 bad line not indexed (the other records were): line 3: ")
    assert "duplicate _id 'a' (first on line 1" in why and "give that line its own _id" in why
    with pytest.raises(InputError, match=r"duplicate doc_id 'a'.*export\.jsonl:1.*:3"):
        load_paths(path)  # named explicitly: still refused, naming both lines


def test_a_damaged_pdf_logs_nothing_and_is_named_in_the_report(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    good = make_pdf([["Hello page one"]])
    (tmp_path / "cut.pdf").write_bytes(good[: len(good) // 2])  # no %%EOF: pypdf warns
    (tmp_path / "fake.pdf").write_bytes(b"just text, not a pdf")
    (tmp_path / "good.pdf").write_bytes(good)
    with caplog.at_level(logging.WARNING):
        result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["good.pdf"]
    reasons = {Path(p).name: why for p, why in result.report.unreadable}
    assert set(reasons) == {"cut.pdf", "fake.pdf"}
    assert all(why.startswith("broken PDF") for why in reasons.values())
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []
    assert capfd.readouterr().err == ""
    assert logging.getLogger("pypdf").level == logging.NOTSET  # restored


def test_a_root_typed_in_nfc_for_an_nfd_file_says_which_name_is_on_disk(
    tmp_path: Path,
) -> None:
    nfd = unicodedata.normalize("NFD", "résumé.md")
    (tmp_path / nfd).write_text("made on a Mac\n", encoding="utf-8")
    typed = tmp_path / unicodedata.normalize("NFC", "résumé.md")
    with pytest.raises(InputError) as caught:
        load_paths(typed)
    message = str(caught.value)
    assert f"{str(typed)!r} does not exist, but {str(tmp_path / nfd)!r} does" in message
    assert "NFC vs NFD" in message and "pass the name as it is on disk" in message
    assert [d.text for d in load_paths(tmp_path / nfd).documents] == ["made on a Mac\n"]
    with pytest.raises(InputError, match=r"nope\.md' does not exist: check the spelling"):
        load_paths(tmp_path / "nope.md")  # no other form: the plain message


def test_a_root_that_is_a_link_loop_or_dangling_link_says_so_and_where_it_points(
    tmp_path: Path,
) -> None:
    (tmp_path / "self").symlink_to("self")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "dead.md").symlink_to(tmp_path / "gone.md")
    fix = "point the link at an existing file or folder, or pass that file or folder itself"
    expected = {
        "self": "is a symlink loop (it points to 'self')",
        "a": "is a symlink loop (it points to 'b')",
        "dead.md": f"is a broken symlink (it points to {str(tmp_path / 'gone.md')!r})",
    }
    for name, what in expected.items():
        with pytest.raises(InputError) as caught:
            load_paths(tmp_path / name)
        assert str(caught.value) == f"path {str(tmp_path / name)!r} {what}: {fix}"

"""PDF loading with pypdf: page text and boundaries, and every PDF that cannot give text
named in the report with its reason (no text layer, encrypted, broken, pypdf missing)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import ctxselect as cs
from _support.pdfs import encrypt_pdf, make_pdf
from ctxselect.chunk import make_chunker
from ctxselect.config import ChunkSpec
from ctxselect.errors import InputError
from ctxselect.ingest import load_paths
from ctxselect.ingest.pdf import NO_TEXT, PAGE_BREAK, pdf_to_text

MANUAL = [
    ["Pump manual", "Installing the pump: open the valve (slowly)."],
    ["Wiring: connect the brown wire to L1."],
    None,  # a full-page drawing: no text on this page
    ["Maintenance: replace the seal every 12 months."],
]


def _page_texts(text: str) -> list[str]:
    return text.split(PAGE_BREAK)


def test_pages_are_joined_in_order_with_their_boundaries() -> None:
    extracted = pdf_to_text(make_pdf(MANUAL))
    pages = _page_texts(extracted.text)
    assert len(pages) == 4 and pages[2] == ""
    assert "Installing the pump" in pages[0] and "brown wire" in pages[1]
    assert "replace the seal" in pages[3]
    for number, start in enumerate(extracted.page_starts, start=1):
        assert extracted.page_at(start) == number
        assert extracted.text[start:].startswith(pages[number - 1])
    assert extracted.text.count("\f") == 3  # form feeds mark page boundaries only


def test_a_pdf_in_a_folder_loads_as_kind_pdf_with_its_extracted_text(tmp_path: Path) -> None:
    (tmp_path / "manual.pdf").write_bytes(make_pdf(MANUAL))
    result = load_paths(tmp_path)
    (doc,) = result.documents
    assert doc.kind == "pdf" and doc.doc_id == "manual.pdf"
    assert doc.text == pdf_to_text(make_pdf(MANUAL)).text
    assert result.report.binary == 0 and result.report.unreadable == ()


def test_chunks_point_into_the_extracted_text_with_page_numbers_in_headers(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "manual.pdf").write_bytes(make_pdf(MANUAL))
    (doc,) = load_paths(tmp_path).documents
    for spec, expected in (
        (ChunkSpec(chunker="auto", size=400), ["manual.pdf p. 1-4"]),
        (ChunkSpec(chunker="pdf", size=12), None),
    ):
        chunks = make_chunker(spec).chunk(doc)
        for chunk in chunks:
            assert doc.text[chunk.start : chunk.end] == chunk.text
            assert chunk.n_tokens <= spec.size
            first = doc.text.count("\f", 0, chunk.start) + 1
            last = doc.text.count("\f", 0, chunk.end) + 1
            pages = f"p. {first}" if first == last else f"p. {first}-{last}"
            assert chunk.header == f"manual.pdf {pages}"
        if expected is not None:
            assert [c.header for c in chunks] == expected
    small = make_chunker(ChunkSpec(chunker="pdf", size=12)).chunk(doc)
    assert {c.header for c in small} >= {"manual.pdf p. 1", "manual.pdf p. 2", "manual.pdf p. 4"}
    seal = next(c for c in small if "seal" in c.text)
    assert seal.header == "manual.pdf p. 4"
    start, end = (int(x) for x in seal.parent_id.rsplit("@", 1)[1].split(":"))
    assert "replace the seal" in doc.text[start:end] and "\f" not in doc.text[start:end]


def test_encrypted_pdf_with_an_empty_user_password_is_read(tmp_path: Path) -> None:
    (tmp_path / "locked-for-editing.pdf").write_bytes(encrypt_pdf(make_pdf(MANUAL), ""))
    (doc,) = load_paths(tmp_path).documents
    assert "brown wire" in doc.text


def test_unreadable_pdfs_are_named_with_their_reason_and_the_rest_loads(
    tmp_path: Path,
) -> None:
    good = make_pdf(MANUAL)
    files = {
        "scan.pdf": make_pdf([None, None]),
        "secret.pdf": encrypt_pdf(good, "hunter2"),
        "broken.pdf": b"%PDF-1.4\nthis is not a PDF body\n",
        "truncated.pdf": good[: len(good) // 2],
        "empty.pdf": b"",
        "manual.pdf": good,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["manual.pdf"]
    reasons = {Path(path).name: why for path, why in result.report.unreadable}
    assert set(reasons) == set(files) - {"manual.pdf"}
    assert reasons["scan.pdf"].startswith(NO_TEXT + ":") and "2 page(s)" in reasons["scan.pdf"]
    assert reasons["secret.pdf"].startswith("encrypted PDF: it needs a password")
    for name in ("broken.pdf", "truncated.pdf", "empty.pdf"):
        assert reasons[name].startswith("broken PDF: pypdf could not parse it ("), name
    summary = result.report.summary()
    assert "scan.pdf (no extractable text" in summary and "Could not read 5" in summary


def test_pdf_to_text_raises_input_errors_naming_the_reason() -> None:
    with pytest.raises(InputError, match=r"^no extractable text"):
        pdf_to_text(make_pdf([None]))
    with pytest.raises(InputError, match=r"^encrypted PDF"):
        pdf_to_text(encrypt_pdf(make_pdf(MANUAL), "pw"))
    with pytest.raises(InputError, match=r"^broken PDF"):
        pdf_to_text(b"not a pdf at all")


def test_without_pypdf_pdfs_are_named_as_needing_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "manual.pdf").write_bytes(make_pdf(MANUAL))
    (tmp_path / "notes.txt").write_text("plain text still loads")
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf now raises ImportError
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["notes.txt"]
    ((path, why),) = result.report.unreadable
    assert path.endswith("manual.pdf")
    assert "pip install 'ctxselect[pdf]'" in why


def test_binary_and_too_large_files_are_named_not_only_counted(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("fine")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01binary" * 20)
    (tmp_path / "huge.md").write_text("# Big\n\n" + "word " * 400)
    report = load_paths(tmp_path, max_bytes=1000).report
    assert report.binary == 1 and report.too_large == 1
    assert report.skipped_files == (
        (str(tmp_path / "blob.txt"), "binary"),
        (str(tmp_path / "huge.md"), "too large: 2,007 bytes > --max-bytes 1,000"),
    )
    assert f"Skipped files: {tmp_path / 'blob.txt'} (binary), {tmp_path / 'huge.md'}" in (
        report.summary()
    )


def test_the_cli_index_report_names_each_file_it_could_not_use(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
    from ctxselect.interfaces.cli.main import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.pdf").write_bytes(make_pdf(MANUAL))
    (docs / "scan.pdf").write_bytes(make_pdf([None]))
    (docs / "secret.pdf").write_bytes(encrypt_pdf(make_pdf(MANUAL), "pw"))
    (docs / "blob.txt").write_bytes(b"\x00" * 64)
    (docs / "slides.key").write_bytes(b"keynote")
    ix = str(tmp_path / "ix")
    result = CliRunner().invoke(cli, ["index", str(docs), "--index", ix])
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"unsupported (no loader for the file type): {docs / 'slides.key'}" in out
    assert f"skipped files: {docs / 'blob.txt'} (binary)" in out
    assert "could not read 2 file(s):" in out
    assert f"  {docs / 'scan.pdf'}: no extractable text: its 1 page(s)" in out
    assert f"  {docs / 'secret.pdf'}: encrypted PDF: it needs a password" in out
    hits = json.loads(
        CliRunner().invoke(cli, ["search", "brown wire", "--index", ix, "--json"]).output
    )
    assert json.dumps(hits).count("manual.pdf p. ") >= 1


def test_chunk_file_on_a_pdf_without_text_says_why(tmp_path: Path) -> None:
    import ctxselect as cs

    (tmp_path / "scan.pdf").write_bytes(make_pdf([None]))
    with pytest.raises(InputError, match=r"^cannot chunk .*scan\.pdf: no extractable text"):
        cs.chunk_file(tmp_path / "scan.pdf")
    (tmp_path / "manual.pdf").write_bytes(make_pdf(MANUAL))
    assert cs.chunk_file(tmp_path / "manual.pdf")[0].header == "manual.pdf p. 1-4"


def test_pages_that_fail_to_extract_are_named_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pypdf

    real = pypdf.PageObject.extract_text

    def damaged(page: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        text = real(page, *args, **kwargs)
        if "brown wire" in text or "replace the seal" in text:
            raise ValueError("damaged content stream")
        return text

    monkeypatch.setattr(pypdf.PageObject, "extract_text", damaged)
    (tmp_path / "manual.pdf").write_bytes(make_pdf(MANUAL))
    (tmp_path / "whole.pdf").write_bytes(make_pdf([["Only page, read in full."]]))
    result = load_paths(tmp_path)
    docs = {d.doc_id: d for d in result.documents}
    assert _page_texts(docs["manual.pdf"].text)[1:] == ["", "", ""]  # the other pages stay
    path = str(tmp_path / "manual.pdf")
    why = "pages 2, 4 of 4 could not be extracted and are left empty; repair it"
    [(named, reason)] = result.report.partial_files  # whole.pdf is not named
    assert named == path and reason.startswith(why)
    assert f"Partly read: {path} (pages 2, 4 of 4" in result.report.summary()
    report = cs.index_paths([tmp_path], index=tmp_path / "ix")
    assert [tuple(p) for p in report.partial_files] == [(path, reason)]
    from ctxselect.interfaces.cli.render import index_report

    assert f"partly read: {path} (pages 2, 4 of 4 could not" in index_report(report)

"""PDF bytes to one document text, page by page, with pypdf.

The pages' text is joined with :data:`PAGE_BREAK` (a form feed on a line of its own, the
page separator ``pdftotext`` writes too), so the page boundaries travel with the stored
text: the ``pdf`` chunker finds them again and puts page numbers in chunk headers, and
chunk offsets point into exactly this extracted text. A form feed inside a page's own
text becomes a newline, so every form feed in the document is a page boundary.

pypdf is an extra (``pip install 'ctxselect[pdf]'``): pure Python, BSD-licensed and
maintained, so it installs everywhere without a compiler. A PDF that cannot give text
raises :class:`~ctxselect.errors.InputError` whose message is the reason the ingest
report shows: no text layer ("no extractable text"), encrypted, or broken.
"""

from __future__ import annotations

import bisect
import contextlib
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ctxselect._require import require
from ctxselect.errors import InputError
from ctxselect.ingest.text import normalize, repair_surrogates

PAGE_BREAK = "\n\f\n"
"""What separates two pages in the document text."""

NO_TEXT = "no extractable text"
"""How a PDF without a text layer is named in the ingest report."""


@dataclass(frozen=True, slots=True)
class PdfText:
    """The text of a PDF and where each page starts in it.

    Attributes:
        text: The pages' normalised text joined by :data:`PAGE_BREAK`.
        page_starts: Offset in ``text`` where each page starts (page 1 at index 0).
        failed_pages: 1-based numbers of pages pypdf could not extract (left empty).
    """

    text: str
    page_starts: tuple[int, ...]
    failed_pages: tuple[int, ...] = ()

    def page_at(self, offset: int) -> int:
        """Return the 1-based number of the page holding ``text[offset]``."""
        return bisect.bisect_right(self.page_starts, offset)

    def missing(self) -> str:
        """Name the pages left empty, with the fix ("" when none failed)."""
        if not self.failed_pages:
            return ""
        pages = ", ".join(map(str, self.failed_pages))
        noun = "page" if len(self.failed_pages) == 1 else "pages"
        return (
            f"{noun} {pages} of {len(self.page_starts)} could not be extracted and are "
            f"left empty; repair it (e.g. qpdf in.pdf out.pdf) or export it again"
        )


def pdf_to_text(data: bytes) -> PdfText:
    """Extract the text of a PDF, page by page, into one normalised text.

    An encrypted PDF with an empty user password (an owner password only, which forbids
    editing but not reading) is opened; one that needs a password is not.

    Args:
        data: The bytes of the PDF file.

    Returns:
        The text and its page boundaries.

    Raises:
        MissingExtraError: pypdf is not installed.
        InputError: The PDF has no text layer, needs a password, or cannot be parsed;
            the message starts with the reason (:data:`NO_TEXT`, "encrypted PDF",
            "broken PDF").
    """
    pypdf = require("pypdf", extra="pdf", feature="reading PDF files")
    with _quiet_pypdf():
        return _extract(_open(pypdf, data))


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Silence pypdf's log lines ("EOF marker not found" ...) while a PDF is read: they
    name no file, and what matters reaches the ingest report as the InputError's reason."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _extract(reader: Any) -> PdfText:
    """The text of every page of an opened PDF (see :func:`pdf_to_text`)."""
    try:
        pages = list(reader.pages)
    except Exception as exc:  # pypdf raises many types on a damaged page tree
        raise InputError(_broken(exc)) from exc
    texts: list[str] = []
    failed: list[int] = []
    for number, page in enumerate(pages, start=1):
        try:
            raw = page.extract_text() or ""
        except Exception:  # one damaged content stream should not lose the other pages
            failed.append(number)
            raw = ""
        texts.append(_clean(raw))
    if not any(t.strip() for t in texts):
        if failed:
            raise InputError(
                f"broken PDF: text extraction failed on every page ({len(pages)}); repair "
                f"it (e.g. qpdf in.pdf out.pdf) or export it again"
            )
        raise InputError(
            f"{NO_TEXT}: its {len(pages)} page(s) have no text layer (a scanned PDF?); "
            f"add one with OCR (e.g. ocrmypdf in.pdf out.pdf) and index the result"
        )
    return _join(texts, failed)


def _open(pypdf: Any, data: bytes) -> Any:
    """Return a PdfReader over ``data``, decrypted when no password is needed."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
    except Exception as exc:  # PdfReadError, but also struct and value errors on junk
        raise InputError(_broken(exc)) from exc
    if not reader.is_encrypted:
        return reader
    try:
        opened = reader.decrypt("")
    except pypdf.errors.DependencyError as exc:
        raise InputError(
            f"encrypted PDF: its cipher needs the 'cryptography' package ({exc}); run "
            f"pip install 'pypdf[crypto]', or save a decrypted copy and index that"
        ) from exc
    except Exception as exc:
        raise InputError(_broken(exc)) from exc
    if not opened:
        raise InputError(
            "encrypted PDF: it needs a password to open; save a decrypted copy (e.g. "
            "qpdf --decrypt --password=PASSWORD in.pdf out.pdf) and index that"
        )
    return reader


def _broken(exc: BaseException) -> str:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (
        f"broken PDF: pypdf could not parse it ({detail}); repair it (e.g. qpdf in.pdf "
        f"out.pdf) or export it again"
    )


def _clean(raw: str) -> str:
    """Normalise one page's text; a form feed inside a page becomes a newline."""
    text, _ = repair_surrogates(normalize(raw))
    return text.replace("\f", "\n")


def _join(texts: list[str], failed: list[int]) -> PdfText:
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + len(PAGE_BREAK)
    return PdfText(PAGE_BREAK.join(texts), tuple(starts), tuple(failed))


__all__ = ["NO_TEXT", "PAGE_BREAK", "PdfText", "pdf_to_text"]

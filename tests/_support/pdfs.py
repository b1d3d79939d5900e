"""Tiny real PDFs for tests: text pages, pages without a text layer, encrypted copies."""

from __future__ import annotations

import io


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: list[str] | None) -> bytes:
    """A page's content stream: lines of Helvetica text, or (None) a drawn box only."""
    if lines is None:  # vector graphics, no text operators: what a scan without OCR gives
        return b"0.5 w 72 72 m 540 72 l 540 720 l 72 720 l h S"
    shown = " ".join(f"({_escape(line)}) '" for line in lines)
    return f"BT /F1 12 Tf 14 TL 72 740 Td {shown} ET".encode("latin-1")


def make_pdf(pages: list[list[str] | None]) -> bytes:
    """Return a valid PDF 1.4 file with one page per item of ``pages``.

    An item is the page's lines of text, or None for a page that only draws a box (no
    text layer). Objects: 1 catalog, 2 page tree, 3 font, then a page and its content
    stream per page; the cross-reference table holds exact byte offsets.
    """
    n = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    bodies = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        stream = _content(lines)
        bodies.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        bodies.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(bodies) + 1}\n0000000000 65535 f \n".encode())
    out.writelines(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out.write(
        f"trailer\n<< /Size {len(bodies) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


def encrypt_pdf(data: bytes, user_password: str, owner_password: str = "owner") -> bytes:
    """Return ``data`` encrypted by pypdf (RC4-128, which pypdf reads without extras)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password, owner_password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()

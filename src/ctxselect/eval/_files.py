"""Line-by-line reading of evaluation files, with errors that name file and line."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ctxselect.errors import InputError

PathLike = str | os.PathLike[str]


def read_lines(path: PathLike, what: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for each non-blank line, numbered from 1.

    Args:
        path: The file to read, as UTF-8 (a leading byte-order mark is ignored).
        what: What the file should be (``"qrels"``), named in error messages.

    Raises:
        InputError: The file is missing, unreadable or not UTF-8.
    """
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield number, line.rstrip("\r\n")
    except FileNotFoundError:
        raise InputError(f"{what} file {os.fspath(path)!r} does not exist") from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} file {os.fspath(path)!r} is not UTF-8 text ({exc.reason} at byte "
            f"{exc.start}): save it as UTF-8"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read {what} file {os.fspath(path)!r}: {exc.strerror}") from None


def line_error(path: PathLike, number: int, expected: str, line: str) -> InputError:
    """Build the InputError for one malformed line: file, line number, expectation."""
    shown = line if len(line) <= 80 else line[:77] + "..."
    return InputError(f"{os.fspath(path)}:{number}: expected {expected}, got {shown!r}")


def parse_grade(text: str) -> int | None:
    """Parse a relevance grade written as an integer (``2``, or ``2.0``); None if not."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None

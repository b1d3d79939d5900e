"""Read the reference lines of a ``select`` result's text block (the structured content
counts them; the ids travel once, in these lines)."""

from __future__ import annotations

import re

REFERENCE_LINE = re.compile(r"^already provided: chunk (\S+) lines \d+-\d+ in call \d+$", re.M)


def reference_ids(text: str) -> list[str]:
    """The chunk ids of the reference lines in ``text``, in order."""
    return REFERENCE_LINE.findall(text)

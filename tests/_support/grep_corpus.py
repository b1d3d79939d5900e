"""A small mixed corpus (code, docs, release notes) and its index, for the grep tests.

Files in folders so globs have something to choose between; identifiers a question in
words would not match; a long document with a match every tenth line, for budgets.
"""

from __future__ import annotations

from pathlib import Path

from ctxselect import api

APP = '''"""The app."""

import os


def parse_header(line):
    """Split a header line."""
    name, _, value = line.partition(":")
    return name.strip(), value.strip()


def max_result_tokens():
    return int(os.environ.get("MAX", "20000"))
'''

HELPERS = """def parse_header_fast(line):
    return line.split(":", 1)

# the literal a.b
# differs from axb
"""

GUIDE = """# Guide

Call Parse_Header on each line of a request.

## Limits

The server reads MAX_RESULT_TOKENS from its environment.
"""

RELEASE = """# 1.0

parse_header was added.
"""

FILES = {
    "src/app.py": APP,
    "src/util/helpers.py": HELPERS,
    "docs/guide.md": GUIDE,
    "releases/1.0.md": RELEASE,
    "docs/long.md": "".join(
        f"needle {n}\n" if n % 10 == 0 else f"hay line {n} of the long document\n"
        for n in range(1, 201)
    ),
}


def build(tmp_path: Path) -> str:
    """Write the corpus under ``tmp_path/corpus``, index it, return the index folder."""
    root = tmp_path / "corpus"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    folder = str(tmp_path / "ix")
    api.index_paths([root], folder)
    return folder

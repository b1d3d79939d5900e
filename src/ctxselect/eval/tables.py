"""Render lab rows as an aligned plain-text table or a Markdown table.

Rows are any values with ``headers()`` and ``cells()`` (``SizeSweepRow``,
``BudgetRow``); every row of one table must be of the same type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ctxselect.errors import ConfigError


class TableRow(Protocol):
    """A value that knows its column headers and displayed cells."""

    def headers(self) -> tuple[str, ...]:
        """Column headers."""
        ...

    def cells(self) -> tuple[str, ...]:
        """The row's values as displayed."""
        ...


def _grid(rows: Sequence[TableRow]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    if not rows:
        raise ConfigError("no rows to render: run at least one setting first")
    kinds = {type(row).__name__ for row in rows}
    if len(kinds) > 1:
        raise ConfigError(f"one table holds one kind of row, got {', '.join(sorted(kinds))}")
    headers = rows[0].headers()
    if any(row.headers() != headers for row in rows):
        raise ConfigError("rows disagree on their columns (exact and estimated tokens mixed)")
    return headers, [row.cells() for row in rows]


def render_table(rows: Sequence[TableRow]) -> str:
    """Render rows as a plain monospace table: header, dash rule, right-aligned values.

    Raises:
        ConfigError: No rows, or rows of different kinds.
    """
    headers, body = _grid(rows)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    lines = [
        "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    return "\n".join(lines) + "\n"


def to_markdown(rows: Sequence[TableRow]) -> str:
    """Render rows as a Markdown (GitHub) table with right-aligned columns.

    Raises:
        ConfigError: No rows, or rows of different kinds.
    """
    headers, body = _grid(rows)
    widths = [max(len(h), 4, *(len(r[i]) for r in body)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(r) for r in body)]) + "\n"

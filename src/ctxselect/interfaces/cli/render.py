"""Human-readable text for the CLI's default (non ``--json``) output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxselect.experiments import EvalResult, LabReport
from ctxselect.types import Chunk, Explanation, Hit, IndexInfo, IndexReport, Selection


def render_table(rows: Sequence[Any]) -> str:
    """Align rows that know their ``headers()`` and ``cells()`` as a text table."""
    if not rows:
        return "(no rows)"
    grid = [rows[0].headers(), *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in grid) for i in range(len(grid[0]))]
    lines = [
        "  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)) for line in grid
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _preview(text: str, width: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def index_report(report: IndexReport) -> str:
    """Summarise an ``index`` run in a few lines."""
    lines = [
        f"{report.index}: {report.documents} documents, {report.chunks} chunks "
        f"({report.added} added, {report.updated} updated, {report.removed} removed, "
        f"{report.unchanged} unchanged) in {report.seconds:.2f} s"
    ]
    if not report.rebuilt:
        lines.append("nothing changed: no work done")
    skipped = {k: v for k, v in report.skipped.items() if v}
    if skipped:
        lines.append("skipped: " + ", ".join(f"{v} {k}" for k, v in sorted(skipped.items())))
    if report.unreadable:
        lines.append(f"could not read {len(report.unreadable)} file(s):")
        lines.extend(f"  {path}: {why}" for path, why in report.unreadable)
    if report.note:
        lines.append(report.note)
    return "\n".join(lines)


def hits(ranked: Sequence[Hit]) -> str:
    """One line per hit: rank, score, chunk id, tokens, a preview of the text."""
    if not ranked:
        return "no chunk matches the query"
    return "\n".join(
        f"{h.rank:>3}  {h.score:8.4f}  {h.chunk_id}  [{h.n_tokens} tok]  {_preview(h.text)}"
        for h in ranked
    )


def selection_summary(selection: Selection) -> str:
    """One line (for stderr) on what the selection used and dropped."""
    line = (
        f"-- {len(selection.chunks)} piece(s), {selection.tokens_used}/{selection.budget} "
        f"tokens, {len(selection.dropped)} dropped"
    )
    return f"{line}: {selection.note}" if selection.note else line


def explanations(items: Sequence[Explanation]) -> str:
    """A term table per explained chunk."""
    if not items:
        return "no chunk matches the query"
    blocks = []
    for e in items:
        rows = [f"{e.chunk_id}  score {e.score:.6f}  ({e.mode})"]
        rows.append(f"  {'term':<20} {'tf':>6} {'df':>6} {'idf':>8} {'contribution':>13}")
        rows.extend(
            f"  {t.term:<20} {t.tf:>6g} {t.df:>6} {t.idf:>8.4f} {t.contribution:>13.6f}"
            for t in e.terms
        )
        if e.note:
            rows.append(f"  {e.note}")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def chunks(items: Sequence[Chunk]) -> str:
    """One line per chunk: id, span, tokens, header, preview."""
    return "\n".join(
        f"{c.chunk_id}  {c.start}-{c.end}  [{c.n_tokens} tok]"
        + (f"  <{c.header}>" if c.header else "")
        + f"  {_preview(c.text, 60)}"
        for c in items
    )


def info(data: IndexInfo) -> str:
    """Key: value lines describing an index."""
    lines = [
        f"index:          {data.index}",
        f"documents:      {data.documents}",
        f"chunks:         {data.chunks}",
        f"tokens:         {data.tokens}",
        f"disk:           {data.disk_bytes / 1e6:.2f} MB",
        f"schema version: {data.schema_version}",
        f"modes:          {', '.join(data.modes)}",
        f"created:        {data.created}",
        f"updated:        {data.updated}",
    ]
    lines.extend(f"{key + ':':<15} {value}" for key, value in data.settings.items())
    return "\n".join(lines)


def eval_result(result: EvalResult) -> str:
    """Metric values and what the evaluation covered."""
    lines = [
        f"{result.corpus}: {result.documents} documents, {result.chunks} chunks, "
        f"mode {result.mode}, {result.n_queries} queries",
    ]
    width = max(len(name) for name in result.metrics)
    lines.extend(f"  {name:<{width}}  {value:.4f}" for name, value in result.metrics.items())
    if result.excluded_no_relevant:
        lines.append(f"excluded (no judged-relevant document): {result.excluded_no_relevant}")
    if result.missing_from_run:
        lines.append(f"queries with no hit (scored 0): {result.missing_from_run}")
    if result.unknown_docs_in_qrels:
        lines.append(f"judged documents not in the corpus: {result.unknown_docs_in_qrels}")
    lines.append(
        f"index {result.index_seconds:.2f} s, search {result.search_seconds:.2f} s"
        + (f", run written to {result.run_path}" if result.run_path else "")
    )
    return "\n".join(lines)


def lab_report(report: LabReport) -> str:
    """The chapter's two tables."""
    parts = [
        f"Chunk-size sweep on {report.corpus} ({report.n_queries} labeled queries, "
        f"paragraph chunks, mode {report.mode}):",
        render_table(report.size_rows),
        "",
        f"Budget table ({report.budget_chunk_chars}-character chunks, {report.packer} fill, "
        f"tokens in {report.tokenizer}, framing included):",
        render_table(report.budget_rows),
    ]
    if report.unmatched_labels:
        parts.append(
            "labels matching no document (those queries can never be answered): "
            + ", ".join(report.unmatched_labels)
        )
    return "\n".join(parts)

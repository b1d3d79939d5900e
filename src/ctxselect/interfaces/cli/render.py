"""Human-readable text for the CLI's default (non ``--json``) output.

The measuring commands' text (tune, eval, lab, sweep, cost, compare) is in
:mod:`~ctxselect.interfaces.cli.render_measure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxselect.agent.examples import ExampleSelection
from ctxselect.config import FuseSpec
from ctxselect.types import Chunk, Explanation, Hit, IndexInfo, IndexReport, Selection, one_line


def _preview(text: str, width: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


_SHOWN_NAMES = 5


def counted(n: int, noun: str, plural: str = "") -> str:
    """``1 document``, ``2 documents``: ``n`` and ``noun``, plural (``plural`` or noun+s)
    unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _count(n: int, noun: str) -> str:
    """:func:`counted` with thousands separators (``1,024 chunks``)."""
    return f"{n:,} {noun if n == 1 else noun + 's'}"


def _first_few(names: Sequence[str]) -> str:
    more = len(names) - _SHOWN_NAMES
    tail = f" and {more} more (--json lists them all)" if more > 0 else ""
    return ", ".join(names[:_SHOWN_NAMES]) + tail


# Counted in an IndexReport's ``skipped`` but loaded all the same: each has its own line.
_LOADED_ANYWAY = ("decoded_with_replacement", "code_as_tokens")


def index_report(report: IndexReport) -> str:
    """Summarise an ``index`` run in a few lines."""
    lines = [
        f"{report.index}: {counted(report.documents, 'document')}, "
        f"{counted(report.chunks, 'chunk')} "
        f"({report.added} added, {report.updated} updated, {report.removed} removed, "
        f"{report.unchanged} unchanged) in {report.seconds:.2f} s"
    ]
    if not report.rebuilt:
        done = "compacted the changes an earlier write left pending" if report.compacted else ""
        lines.append(f"nothing changed: {done or 'no work done'}")
    skipped = {k: v for k, v in report.skipped.items() if v and k not in _LOADED_ANYWAY}
    if skipped:
        lines.append(
            "skipped: "
            + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(skipped.items()))
        )
    replaced = report.skipped.get("decoded_with_replacement", 0)
    if replaced:
        names = _first_few([one_line(path) for path in report.replaced_files])
        lines.append(
            f"loaded with invalid UTF-8 replaced by U+FFFD: {counted(replaced, 'file')}"
            f"{': ' + names if names else ''} (save them as UTF-8 to keep every character)"
        )
    if report.partial_files:
        names = _first_few([f"{one_line(path)} ({why})" for path, why in report.partial_files])
        lines.append(f"partly read: {names}")
    if report.unsupported_files:
        names = _first_few([one_line(path) for path in report.unsupported_files])
        lines.append(f"unsupported (no loader for the file type): {names}")
    if report.skipped_files:
        names = _first_few([f"{one_line(path)} ({why})" for path, why in report.skipped_files])
        lines.append(f"skipped files: {names}")
    if report.token_fallbacks:
        names = _first_few([f"{one_line(p)} ({why})" for p, why in report.token_fallbacks])
        lines.append(f"cut by tokens, not parsed as code: {names}")
    if report.outside_links:
        lines.append(
            f"not followed: {len(report.outside_links)} symlink(s) leading outside the roots "
            f"(--follow-symlinks reads them):"
        )
        shown = [f"{one_line(link)} -> {one_line(to)}" for link, to in report.outside_links]
        lines.extend(f"  {line}" for line in shown[:_SHOWN_NAMES])
        if len(shown) > _SHOWN_NAMES:
            lines.append(f"  and {len(shown) - _SHOWN_NAMES} more (--json lists them all)")
    if report.unreadable:
        lines.append(f"could not read {len(report.unreadable)} file(s):")
        lines.extend(f"  {one_line(path)}: {why}" for path, why in report.unreadable)
    if report.note:
        lines.append(report.note)
    return "\n".join(lines)


def hits(ranked: Sequence[Hit], lines: Sequence[tuple[int, int]]) -> str:
    """One line per hit: rank, score, chunk id, its lines, tokens, a preview of the text.

    ``lines`` holds each hit's first and last line in its document (1-based).
    """
    if not ranked:
        return "no chunk matches the query"
    return "\n".join(
        f"{h.rank:>3}  {h.score:8.4f}  {_p(h.p_relevant)}{one_line(h.chunk_id)}  "
        f"lines {first}-{last}  "
        f"[{h.n_tokens} tok]  {_preview(h.text)}"
        for h, (first, last) in zip(ranked, lines, strict=True)
    )


def selection_summary(selection: Selection, lines: Sequence[tuple[int, int]]) -> str:
    """What the selection used and dropped, then where each piece lies (for stderr).

    ``lines`` holds each piece's first and last line in its document (1-based).
    """
    line = (
        f"-- {len(selection.chunks)} piece(s), {selection.tokens_used}/{selection.budget} "
        f"tokens, {len(selection.dropped)} dropped"
    )
    line += f"; stopped: {selection.stop}" if selection.stop else ""
    rows = [f"{line}: {selection.note}" if selection.note else line]
    rows.extend(
        f"   {one_line(c.doc_id)} lines {first}-{last} (chars {c.start}-{c.end}), "
        f"{c.tokens} tokens" + (f", P {c.p_relevant:.2f}" if c.p_relevant is not None else "")
        for c, (first, last) in zip(selection.chunks, lines, strict=True)
    )
    return "\n".join(rows)


def _p(value: float | None) -> str:
    """``P 0.42  `` for a calibrated hit, nothing otherwise."""
    return "" if value is None else f"P {value:.2f}  "


def explanations(items: Sequence[Explanation]) -> str:
    """A term table per explained chunk."""
    if not items:
        return "no chunk matches the query"
    blocks = []
    for e in items:
        p = "" if e.p_relevant is None else f"  P(relevant) {e.p_relevant:.3f}"
        rows = [f"{one_line(e.chunk_id)}  score {e.score:.6f}{p}  ({e.mode})"]
        rows.append(f"  {'term':<20} {'tf':>6} {'df':>6} {'idf':>8} {'contribution':>13}")
        rows.extend(
            f"  {t.term:<20} {t.tf:>6g} {t.df:>6} {t.idf:>8.4f} {t.contribution:>13.6f}"
            + (f"  {t.form}" if t.form else "")  # identifier parts: how the term matched
            for t in e.terms
        )
        if e.note:
            rows.append(f"  {e.note}")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def chunks(items: Sequence[Chunk]) -> str:
    """One line per chunk: id, span, tokens, header, preview."""
    return "\n".join(
        f"{one_line(c.chunk_id)}  {c.start}-{c.end}  [{c.n_tokens} tok]"
        + (f"  <{c.header}>" if c.header else "")
        + f"  {_preview(c.text, 60)}"
        for c in items
    )


def info(data: IndexInfo) -> str:
    """``key = value`` lines describing an index: what it holds, its state, its settings.

    Nested settings become dotted keys (``chunk.size = 512``); ``--json`` gives the
    same values as :class:`IndexInfo`.
    """
    rows: list[tuple[str, object]] = [
        ("index", data.index),
        ("documents", data.documents),
        ("chunks", data.chunks),
        ("tokens", data.tokens),
        ("disk", f"{data.disk_bytes / 1e6:.2f} MB"),
        ("modes", ", ".join(data.modes)),
        ("status", index_status(data)),
        ("generation", f"{data.generation} ({data.delta_segments} delta segment(s))"),
        ("created", data.created),
        ("updated", data.updated),
        ("schema version", data.schema_version),
        ("where keys", ", ".join(data.fields)),
    ]
    dense = ("embedder", "fusion", "tuning", "throughput", "embed_long")
    rows.extend((key, value) for key, value in data.settings.items() if key not in dense)
    lines = [line for key, value in rows for line in _key_value_lines(key, value)]
    lines.extend(f"{key} = {value}" for key, value in dense_settings(data.settings))
    return "\n".join(lines)


def index_status(data: IndexInfo) -> str:
    """Say "up to date", or how many chunk changes wait for compaction and what that means."""
    pending = data.delta_rows + data.deleted_rows
    if not pending:
        return f"up to date (compacted {data.compacted})" if data.compacted else "up to date"
    return (
        f"{pending} change(s) pending compaction ({data.delta_rows} chunk(s) added, "
        f"{data.deleted_rows} removed since {data.compacted or 'the last rebuild'}): bm25 and "
        f"tfidf-sum results already equal a rebuild's; tfidf scores may differ until "
        f"`ctxselect compact`"
    )


def _key_value_lines(key: str, value: object) -> list[str]:
    """``key = value``, one line per leaf of a nested mapping (``chunk.size = 512``)."""
    if isinstance(value, Mapping):
        return [line for k, v in value.items() for line in _key_value_lines(f"{key}.{k}", v)]
    return [f"{key} = {_scalar(value)}"]


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(_scalar(v) for v in value)
    return str(value)


def dense_settings(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The index's embedder, its hybrid fusion and the last tuning run, as (key, value)."""
    embedder = settings.get("embedder")
    if not isinstance(embedder, dict):
        return [("embedder", "none (dense and hybrid need `ctxselect index --embedder minilm`)")]
    rows = [
        (
            "embedder",
            f"{embedder.get('name')} (model {embedder.get('model_id')}, "
            f"{embedder.get('dim')} dims, ann threshold "
            f"{int(embedder.get('ann_threshold', 0)):,} chunks)",
        )
    ]
    if settings.get("embed_long"):
        rows.append(("embed_long", str(settings["embed_long"])))
    measured = settings.get("throughput")
    if isinstance(measured, dict):
        rows.append(
            (
                "throughput",
                f"{float(measured.get('chunks_per_s', 0.0)):,.1f} chunks/s embedding "
                f"{_count(int(measured.get('chunks', 0)), 'chunk')} in the last write that "
                f"embedded"
                + (f", {measured['workers']} workers" if measured.get("workers") else "")
                + f" ({measured.get('at')})",
            )
        )
    fusion = settings.get("fusion")
    spec = FuseSpec(**fusion) if isinstance(fusion, dict) else FuseSpec()
    state = "tuned" if isinstance(fusion, dict) else "untuned default: run `ctxselect tune`"
    rows.append(("fusion", f"{spec.label()} ({state})"))
    tuning = settings.get("tuning")
    if isinstance(tuning, dict):
        baselines = tuning.get("baselines") or {}
        versus = ", ".join(f"{name} {value:.4f}" for name, value in baselines.items())
        rows.append(
            (
                "tuning",
                f"{tuning.get('metric')} {float(tuning.get('cv', 0.0)):.4f} out of sample vs "
                f"{versus} on {tuning.get('n_queries')} queries ({tuning.get('folds')} folds), "
                f"{tuning.get('tuned')}",
            )
        )
    return rows


def examples_summary(selection: ExampleSelection) -> str:
    """One line (for stderr) on the examples chosen and what they cost."""
    line = (
        f"-- {len(selection.examples)} example(s) of {selection.candidates} matching "
        f"({selection.library_size} in the library), {selection.tokens_used}/{selection.budget} "
        f"tokens, {len(selection.dropped)} did not fit"
    )
    return f"{line}: {selection.note}" if selection.note else line


def mcp_banner(info: IndexInfo, tools: Sequence[str], transport: str, cap: int) -> str:
    """The line ``ctxselect mcp`` writes on stderr before serving."""
    return (
        f"ctxselect mcp: serving {info.index} ({counted(info.documents, 'document')}, "
        f"{counted(info.chunks, 'chunk')}) over {transport}; results capped at {cap} tokens; "
        f"tools: {', '.join(tools)}"
    )

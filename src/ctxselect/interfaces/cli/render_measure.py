"""Human-readable text of the measuring commands: tune, eval, lab, sweep, cost, compare.

The read-path and index commands' text is in :mod:`~ctxselect.interfaces.cli.render`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxselect.api.evaluate import (
    Comparison,
    EvalResult,
    LabReport,
    SessionCost,
    render_table,
)
from ctxselect.api.modes import fusion_modes
from ctxselect.api.sweep import EMPTY_DOCS_NOTE, SweepReport
from ctxselect.api.tune import TuningReport
from ctxselect.interfaces.cli.render import counted
from ctxselect.types import one_line

SHOWN_IDS = 5
"""Ids named in a text line before ``...`` (``--json`` lists them all)."""


def _queries(n: int, kind: str = "") -> str:
    """``1 labeled query``, ``2 labeled queries`` (``kind`` the adjective, if any)."""
    noun = f"{kind} query".strip()
    return counted(n, noun, noun.removesuffix("y") + "ies")


def tuning_report(report: TuningReport, *, written: bool) -> str:
    """What ``tune`` chose, how it does out of sample, per fold, and what it changed."""
    metric = report.metric
    versus = "  ".join(f"{name} {value:.4f}" for name, value in report.baselines.items())
    lines = [
        f"{report.index}: tuned hybrid fusion on {_queries(report.n_queries, 'labeled')}, "
        f"{counted(report.grid_size, 'setting')}, {len(report.folds)}-fold cross-validation (seed "
        f"{report.seed})",
        f"chosen:        {report.spec.label()} (depth {report.spec.depth})"
        + ("" if report.mode in fusion_modes() else f" for hybrid; {report.mode} alone to use"),
        f"{'cv ' + metric + ':':<15}{report.cv:.4f} out of sample "
        f"(fold mean {report.cv_fold_mean:.4f} ± {report.fold_std:.4f} fold to fold; "
        f"in sample {report.in_sample:.4f})",
        f"baselines:     {versus} (untuned, same queries)",
        "",
        f"{'fold':>4}  {'spec':<24}  {'train':>6}  {'test':>6}  {'n':>4}",
    ]
    fused = fusion_modes()
    lines.extend(
        f"{f.fold:>4}  {f.spec.label() if f.mode in fused else f.mode + ' alone':<24}  "
        f"{f.train:>6.4f}  {f.test:>6.4f}  {f.n_test:>4}"
        for f in report.folds
    )
    lines += [
        "",
        f"default mode:  {report.default_mode} (the simplest choice within one SE of the "
        "best: plain RRF, then keyword or dense alone, then the other settings)",
        "written to the index: search, select and the MCP server use this fusion for hybrid"
        if written
        else "dry run: nothing was written to the index",
    ]
    return "\n".join(lines)


def eval_result(result: EvalResult) -> str:
    """Metric values and what the evaluation covered."""
    lines = [
        f"{result.corpus}: {counted(result.documents, 'document')}, "
        f"{counted(result.chunks, 'chunk')} ({_chunking(result)}), mode {result.mode}, "
        f"{_queries(result.n_queries)}, "
        f"{result.label_kind} labels, {result.level} level, run {result.depth} deep"
        + (f", embedder {result.embedder}" if result.embedder else ""),
    ]
    if result.filter:
        lines.append(f"filter: {result.filter}")
    if result.budgets:
        lines.append(
            f"budgets: {', '.join(map(str, result.budgets))} tokens ({result.packer} packer, "
            f"framing included), stop {result.stop}"
            + (f", calibration {result.calibration}" if result.calibration else "")
        )
    width = max((len(name) for name in result.metrics), default=0)
    for name, value in result.metrics.items():
        shown = f"{value:.1f}" if name.startswith(("tokens_used@", "chunks@")) else f"{value:.4f}"
        lines.append(f"  {name:<{width}}  {shown}")
    counts = [
        (result.excluded_no_relevant, "excluded (no judged-relevant document)"),
        (result.missing_from_run, "queries with no hit (scored 0)"),
    ]
    lines.extend(f"{what}: {n}" for n, what in counts if n)
    lines += label_mismatches(
        result.unknown_queries_in_qrels,
        result.unknown_query_ids,
        result.unknown_docs_in_qrels or 0,
        result.unknown_doc_ids,
        where="the corpus",
    )
    if result.empty_docs_in_qrels:
        lines.append(empty_docs_line(result.empty_docs_in_qrels, result.empty_doc_ids))
    if result.spans_beyond_text:
        lines.append(f"spans ending past their document's text: {result.spans_beyond_text}")
    if result.unmatched_labels:
        lines.append(unmatched_labels_line(result.unmatched_labels))
    if result.per_query_path:
        lines.append(f"per-query values written to {result.per_query_path}")
    lines.append(
        f"index {result.index_seconds:.2f} s, search {result.search_seconds:.2f} s"
        + (f", run written to {result.run_path}" if result.run_path else "")
    )
    return "\n".join(lines)


def label_mismatches(
    queries: int,
    query_ids: Sequence[str],
    judgments: int,
    doc_ids: Sequence[str],
    *,
    where: str,
) -> list[str]:
    """Lines naming the judged queries the queries file lacks and the judged documents
    ``where`` (the corpus, the index) lacks, the first few ids of each (``eval``, ``tune``)."""
    lines = []
    if queries:
        lines.append(
            f"judged queries missing from the queries file: {queries} ({first_ids(query_ids)})"
        )
    if judgments:
        lines.append(f"judged documents not in {where}: {_judged(judgments, doc_ids)}")
    return lines


def empty_docs_line(judgments: int, doc_ids: Sequence[str]) -> str:
    """Name the judged documents that have no text, so were never indexed (``eval``, ``tune``)."""
    return f"{EMPTY_DOCS_NOTE}: {_judged(judgments, doc_ids)}"


def _judged(judgments: int, doc_ids: Sequence[str]) -> str:
    """``3 (a, b, c)``, or ``3 judgments of 2 documents (a, b)`` when some repeat."""
    if len(doc_ids) in (0, judgments):
        return f"{judgments}" + (f" ({first_ids(doc_ids)})" if doc_ids else "")
    documents = counted(len(doc_ids), "document")
    return f"{counted(judgments, 'judgment')} of {documents} ({first_ids(doc_ids)})"


def first_ids(ids: Sequence[str]) -> str:
    """The first :data:`SHOWN_IDS` ids, comma-separated, then ``...`` if there are more."""
    shown = ", ".join(one_line(i) for i in ids[:SHOWN_IDS])
    return shown + (", ..." if len(ids) > SHOWN_IDS else "")


def _chunking(result: EvalResult) -> str:
    """``tokens 512 cl100k``: how the measured index was chunked (``overlap N`` if any)."""
    overlap = f", overlap {result.overlap}" if result.overlap else ""
    return f"{result.chunker} {result.size} {result.tokenizer}{overlap}"


def lab_report(report: LabReport) -> str:
    """The chapter's two tables."""
    text = (
        f"Chunk-size sweep on {report.corpus} ({_queries(report.n_queries, 'labeled')}, "
        f"paragraph chunks, mode {report.mode}):\n{render_table(report.size_rows)}\n"
        f"Budget table ({report.budget_chunk_chars}-character chunks, {report.packer} fill, "
        f"tokens in {report.tokenizer}, framing included):\n{render_table(report.budget_rows)}"
    )
    if report.unmatched_labels:
        text += unmatched_labels_line(report.unmatched_labels)
    return text.removesuffix("\n")  # click.echo ends the line


def unmatched_labels_line(labels: tuple[str, ...]) -> str:
    """Name the lab labels that match no document (``lab``, ``eval``)."""
    return "labels matching no document (those queries can never be answered): " + ", ".join(labels)


def sweep_footer(report: SweepReport) -> str:
    """Where the sweep wrote its report, and what it measured or reused (for stderr)."""
    return (
        f"-- {report.computed} configuration(s) measured, {report.reused} reused, "
        f"{report.seconds:.1f} s; report: {report.out}/report.html"
    )


def recommendation_data(report: SweepReport) -> dict[str, Any]:
    """The recommended budget, whose knee it is, and every configuration's knee."""
    return {
        "budget": report.recommended.budget,
        "configuration": report.recommended_configuration,
        "recall": report.recommended.recall,
        "metric": report.recommended.metric,
        "at_edge": report.recommended.at_edge,
        "at_lower_edge": report.recommended.at_lower_edge,
        "next_budget": report.recommended.next_budget,
        "gain_after": report.recommended.gain_after,
        "delta": report.recommended.delta,
        "epsilon": report.epsilon,
        "knees": {c.label: c.knee.budget for c in report.curves},
    }


def session_cost(result: SessionCost) -> str:
    """The billed tokens and, with a knee, the surplus."""
    lines = [
        f"budget {result.budget:,} tokens kept for {result.turns} turn(s) at cache factor "
        f"{result.cache_factor:g}: factor 1 + ({result.turns} - 1) x {result.cache_factor:g} "
        f"= {result.factor:g}",
        f"billed over the session: {result.billed:,.0f} tokens",
    ]
    if result.knee is not None and result.surplus is not None:
        lines.append(f"surplus over the knee {result.knee:,}: {result.surplus:,.0f} tokens")
    return "\n".join(lines)


def comparison(result: Comparison) -> str:
    """A row per metric: means, difference, p-value, wins/ties/losses; then the test."""
    header = ("metric", "A", "B", "A - B", "p", "wins", "ties", "losses")
    grid = [header] + [
        (
            m.metric,
            f"{m.mean_a:.4f}",
            f"{m.mean_b:.4f}",
            f"{m.difference:+.4f}",
            f"{m.p_value:.4f}",
            str(m.wins),
            str(m.ties),
            str(m.losses),
        )
        for m in result.metrics
    ]
    widths = [max(len(row[i]) for row in grid) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in grid]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [
        f"A = {result.run_a}, B = {result.run_b}; {_queries(result.n_queries, 'judged')}; wins "
        "count queries where A scores higher.",
        f"p: two-sided paired randomization test, {result.permutations:,} permutations, "
        f"seed {result.seed}.",
    ]
    lines.extend(
        f"{name} ranks chunks (DOC#N ids, as eval --level chunk writes them): scored by "
        "document, each ranked by its best chunk"
        for name in result.by_document
    )
    counts = [
        (result.missing_from_a, "judged queries missing from A (scored 0)"),
        (result.missing_from_b, "judged queries missing from B (scored 0)"),
        (result.excluded_no_relevant, "run queries excluded (no judged-relevant document)"),
    ]
    lines.extend(f"{what}: {n}" for n, what in counts if n)
    return "\n".join(lines)

"""A sweep's tables as text, in the lab's layout (``tables.txt`` and the CLI's output)."""

from __future__ import annotations

from ctxselect.eval.knee import DEFAULT_EPSILON
from ctxselect.eval.summary import SweepReport, knee_row
from ctxselect.eval.tables import render_table, to_markdown

KNEE_RULE = (
    "The knee of a configuration is the smallest budget whose recall@Bt is within ε of "
    "the best recall@Bt that configuration reaches in the sweep. The recommended budget "
    "is the knee of the configuration with the smallest knee among those whose best "
    "recall@Bt is within ε of the best of all configurations (ties: higher recall at the "
    "knee, then grid order)."
)
COST_RULE = (
    "Tokens billed over the session: B × (1 + (T − 1) × c); surplus over the knee: "
    "(B − knee) × (1 + (T − 1) × c), 0 at or below the knee."
)


def describe(report: SweepReport) -> str:
    """One line naming the dataset, its size and what the labels judge."""
    line = (
        f"Sweep on {report.dataset}: {report.documents} documents, {report.n_queries} "
        f"queries, {report.label_kind} labels, ranking metrics at {report.level} level"
    )
    counts = [
        (report.excluded_no_relevant, "queries without a judged-relevant document excluded"),
        (report.unknown_queries, "judged queries missing from the queries file"),
        (report.unknown_docs, "judgments naming documents not in the corpus"),
        (report.spans_beyond_text, "spans ending past their document's text"),
    ]
    notes = [f"{n} {what}" for n, what in counts if n]
    return line + (f" ({'; '.join(notes)})" if notes else "")


def recommendation(report: SweepReport) -> str:
    """One sentence: the recommended budget, whose knee it is, recall there."""
    knee = report.recommended
    edge = " (at the largest budget swept: try larger budgets)" if knee.at_edge else ""
    return (
        f"Recommended budget: {knee.budget} tokens{edge}, the knee of "
        f"{report.recommended_configuration} (recall@{knee.budget}t {knee.recall:.4f}; its "
        f"best {knee.best_recall:.4f} at {knee.best_budget} tokens; ε = {knee.epsilon:g})."
    )


def sweep_tables(report: SweepReport, markdown: bool = False) -> str:
    """Render the size table, each configuration's budget table, knees and costs."""
    table = to_markdown if markdown else render_table
    grid = report.grid
    parts = [
        describe(report),
        "",
        f"Chunk-size sweep (ranking metrics at {report.level} level, tokens in {grid.tokenizer}):",
        table(report.sizes),
    ]
    for curve in report.curves:
        parts += [
            f"Budget table {curve.label} (tokens in {grid.tokenizer}, {grid.format} framing "
            "included; recall/1k tok = recall gained per 1,000 tokens since the budget above):",
            table(curve.points),
        ]
    epsilon = report.epsilon if report.curves else DEFAULT_EPSILON
    parts += [
        f"Knees (ε = {epsilon:g}; * = knee at the largest budget swept). {KNEE_RULE}",
        table([knee_row(c) for c in report.curves]),
        recommendation(report),
        "",
        f"Cost of {report.recommended_configuration} over {report.turns} turns at cache "
        f"factor c = {report.cache_factor:g}, knee {report.recommended.budget}. {COST_RULE}",
        table(report.costs),
    ]
    if report.cache_factor != 1.0:
        parts += ["The same without a prompt cache (c = 1):", table(report.uncached)]
    return "\n".join(parts).rstrip("\n") + "\n"

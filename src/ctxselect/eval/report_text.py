"""A sweep's tables as text, in the lab's layout (``tables.txt`` and the CLI's output)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxselect.config import MIN_BUDGET
from ctxselect.eval.labeled_set import EMPTY_JUDGMENTS_NOTE
from ctxselect.eval.summary import SweepReport, knee_row
from ctxselect.eval.tables import render_table, to_markdown
from ctxselect.types import one_line

SHOWN_IDS = 5
"""Ids a report names of a list before ``...`` (the CLI's ``eval`` and ``tune`` too)."""

KNEE_RULE = (
    "δ = gain per 1k × (1 + (T − 1) × c) is the least gain per 1,000 tokens worth its cost "
    "over the session. The knee of a configuration is the smallest swept budget from which "
    "no larger swept budget gains δ or more per 1,000 tokens on a monotone (isotonic) fit "
    "of its curve: the budget with the highest fitted value minus δ per 1,000 tokens, so a "
    "flat step just below a steep rise does not end the search. Budgets added to a sweep "
    "either leave the knee where it is or move it to one of themselves (never to another "
    "budget already swept): up, when an added budget gains δ or more per 1,000 tokens over "
    "the knee; down, when the step from an added smaller budget to the knee gains at most "
    "δ per 1,000 tokens. A knee at the largest budget swept is at the edge (*: sweep larger "
    "budgets); one at the smallest is at the lower edge (<: sweep smaller budgets, which "
    "may do as well). The recommended budget is, among configurations with a knee below "
    "the largest budget swept, the one with the highest value at its knee (differences "
    "within ε count as ties, broken by fewer tokens, then grid order)."
)
COST_RULE = (
    "Tokens billed over the session: B × (1 + (T − 1) × c); surplus over the knee: "
    "(B − knee) × (1 + (T − 1) × c), 0 at or below the knee."
)


def describe(report: SweepReport) -> str:
    """One line naming the dataset, its size and what the labels judge."""
    documents = f"{report.documents} document{'' if report.documents == 1 else 's'}"
    queries = f"{report.n_queries} quer{'y' if report.n_queries == 1 else 'ies'}"
    line = (
        f"Sweep on {report.dataset}: {documents}, {queries}, {report.label_kind} labels, "
        f"ranking metrics at {report.level} level"
    )
    counts = [
        (
            report.excluded_no_relevant,
            "queries without a judged-relevant document excluded",
            report.excluded_query_ids,
        ),
        (
            report.unknown_queries,
            "judged queries missing from the queries file",
            report.unknown_query_ids,
        ),
        (
            report.unknown_docs,
            "judgments naming documents not in the corpus",
            report.unknown_doc_ids,
        ),
        (report.empty_docs, EMPTY_JUDGMENTS_NOTE, report.empty_doc_ids),
        (report.spans_beyond_text, "spans ending past their document's text", ()),
    ]
    notes = [f"{n} {what}" + (f": {first_ids(ids)}" if ids else "") for n, what, ids in counts if n]
    if report.unmatched_labels:
        notes.append(f"labels matching no document: {', '.join(report.unmatched_labels)}")
    return line + (f" ({'; '.join(notes)})" if notes else "")


def first_ids(ids: Sequence[str]) -> str:
    """The first :data:`SHOWN_IDS` ids, comma-separated, then ``...`` if there are more
    (as ``eval`` and ``tune`` name ids)."""
    shown = ", ".join(one_line(i) for i in ids[:SHOWN_IDS])
    return shown + (", ..." if len(ids) > SHOWN_IDS else "")


def no_recommendation(report: SweepReport) -> str:
    """Why no budget can be recommended ("" when one can): no fill-to-budget selection at
    any swept budget holds a relevant document, so every knee is the smallest budget by
    default, not by measurement."""
    fill = [c for c in report.curves if c.stop == "none"] or list(report.curves)
    if any(c.knee.best_recall > 0 for c in fill):
        return ""
    budgets = report.grid.budgets
    swept = f"{min(budgets):,} to {max(budgets):,}" if len(budgets) > 1 else f"{budgets[0]:,}"
    m = report.recommended.metric
    if all(p.chunks == 0 for c in fill for p in c.points):
        smallest = min((p.mean_chunk_tokens for p in report.sizes), default=0.0)
        why = (
            "no selection holds any chunk: each budget is smaller than a chunk with its "
            f"framing (chunks average {smallest:.0f} tokens at the smallest size swept)"
        )
    else:
        why = "no selected chunk is relevant"
    return (
        f"no budget to recommend: at every budget swept ({swept} tokens) {m}@Bt is 0 in "
        f"every configuration, because {why}: sweep larger budgets (e.g. 500,1000,2000,4000)"
    )


def recommendation(report: SweepReport) -> str:
    """One sentence: the recommended configuration and budget, and why."""
    refused = no_recommendation(report)
    if refused:
        return f"{refused[0].upper()}{refused[1:]}."
    knee = report.recommended
    m = knee.metric
    if knee.at_edge:
        where = " at the edge: sweep larger budgets (no larger budget was swept)"
    else:
        where = (
            f" (no larger budget gains δ per 1k tokens: the step to {knee.next_budget:,} "
            f"gains {knee.gain_after:.4f})"
        )
    if knee.at_lower_edge and knee.budget <= MIN_BUDGET:  # nothing smaller can be swept
        where += (
            f"; at the lower edge, which is the smallest budget select takes ({MIN_BUDGET:,} "
            "tokens)"
        )
    elif knee.at_lower_edge:
        where += (
            f"; at the lower edge: sweep smaller budgets ({knee.budget:,} is the smallest "
            f"swept, and less may do as well, down to {MIN_BUDGET:,})"
        )
    return (
        f"Recommended: {report.recommended_configuration} at {knee.budget:,} tokens{where}; "
        f"{m}@{knee.budget}t {knee.recall:.4f} (its best {knee.best_recall:.4f} at "
        f"{knee.best_budget:,} tokens); δ = {report.gain_per_1k:g} × (1 + ({report.turns} − 1)"
        f" × {report.cache_factor:g}) = {knee.delta:.4f} {m} per 1k tokens; ε = "
        f"{report.epsilon:g}."
    )


def stopping_note(report: SweepReport) -> str:
    """Say which stop rules were measured and how they were calibrated."""
    how = (
        "no P(relevant) model: auto cuts at the largest score gap"
        if report.stop_calibration.startswith("uncalibrated")
        else "each query's P(relevant) from a model fitted on the other folds' queries, "
        "threshold from the cost model"
    )
    used = (
        "the knee and the recommendation use the fill-to-budget curves"
        if "none" in report.grid.stops
        else "no fill-to-budget curve was swept (add none to --stops), so the knee and the "
        "recommendation use these curves"
    )
    return (
        f"Stop rules {', '.join(report.grid.stops)}; calibration {report.stop_calibration} "
        f"({how}). Their rows are `.../stop-<rule>`: tokens used is the mean a selection "
        f"sent, at most the budget; {used}."
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
            "included; hit@Bt = share of queries with a relevant document selected, recall@Bt "
            f"= mean fraction of relevant {report.label_kind} selected; gain/1k tok = "
            f"{report.knee_metric} gained per 1,000 tokens since the budget above):",
            table(curve.points),
        ]
    parts += [
        f"Knees on {report.knee_metric}@Bt (δ = {report.delta:.4f}; * = at the edge, < = at "
        f"the lower edge). {KNEE_RULE}",
        table([knee_row(c) for c in report.curves]),
        recommendation(report),
        "",
        f"Trade-off ({report.recommended_configuration}):",
        *(f"  {line}" for line in report.trade_offs or ["one budget swept: nothing to weigh"]),
        "",
        f"Cost of {report.recommended_configuration} over {report.turns} turns at cache "
        f"factor c = {report.cache_factor:g}, knee {report.recommended.budget}. {COST_RULE}",
        table(report.costs),
    ]
    if report.cache_factor != 1.0:
        parts += ["The same without a prompt cache (c = 1):", table(report.uncached)]
    if report.stop_calibration:
        parts += ["", stopping_note(report)]
    return "\n".join(parts).rstrip("\n") + "\n"

"""A sweep's ``report.html``: one self-contained file (plots inlined as data URIs).

No external stylesheet, script, font or image: the file can be mailed or archived and
still shows everything. Every piece of text is HTML-escaped.
"""

from __future__ import annotations

import base64
import dataclasses
import html
from collections.abc import Mapping, Sequence
from pathlib import Path

from ctxselect.errors import InputError
from ctxselect.eval.labeled_set import EMPTY_JUDGMENTS_NOTE
from ctxselect.eval.plots import RECALL_PLOT, RELEVANT_TOKENS_PLOT, SIZE_PLOT, TOKENS_USED_PLOT
from ctxselect.eval.report_text import (
    COST_RULE,
    KNEE_RULE,
    describe,
    first_ids,
    recommendation,
    sweep_tables,
)
from ctxselect.eval.results import RESULTS_FILE
from ctxselect.eval.summary import SweepReport, knee_row
from ctxselect.eval.tables import TableRow

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
.rule { background: #f7f7ee; border-left: 4px solid #cc9; padding: 0.6em 1em; }
.recommend { font-size: 1.1em; font-weight: 600; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""

_CAPTIONS = {
    RECALL_PLOT: "The knee metric (recall@Bt or hit@Bt) against budget, one line per "
    "configuration; rings mark knees.",
    RELEVANT_TOKENS_PLOT: "Share of the selected tokens that come from relevant documents "
    "or spans, against budget. (nDCG ranks documents and does not depend on the budget; "
    "it is plotted against chunk size.)",
    SIZE_PLOT: "Ranking quality against chunk size, one line per chunker and mode.",
    TOKENS_USED_PLOT: "The knee metric against the mean tokens a selection used, for "
    "fill-to-budget (solid) and for each stopping rule (dashed): at equal mean tokens, "
    "the higher line selects better.",
}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(rows: Sequence[TableRow]) -> str:
    if not rows:
        return "<p>(no rows)</p>"
    head = "".join(f"<th>{_e(h)}</th>" for h in rows[0].headers())
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row.cells()) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _pairs(items: Sequence[tuple[str, object]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in items)
    return f"<table><tbody>{body}</tbody></table>"


def _image(name: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    caption = _CAPTIONS.get(name, name)
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{_e(caption)}">'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _dataset(report: SweepReport) -> str:
    return _pairs(
        [
            ("dataset", report.dataset),
            ("corpus", report.corpus),
            ("documents", f"{report.documents:,}"),
            ("queries evaluated", f"{report.n_queries:,}"),
            ("queries file", report.queries_file),
            ("labels", f"{report.labels_file or report.queries_file} ({report.label_kind})"),
            (
                "queries excluded (no judged-relevant document)",
                _named(report.excluded_no_relevant, report.excluded_query_ids),
            ),
            ("labels matching no document", ", ".join(report.unmatched_labels) or "none"),
            (
                "judged queries missing from the queries file",
                _named(report.unknown_queries, report.unknown_query_ids),
            ),
            (
                "judgments naming documents not in the corpus",
                _named(report.unknown_docs, report.unknown_doc_ids),
            ),
            (EMPTY_JUDGMENTS_NOTE, _named(report.empty_docs, report.empty_doc_ids)),
            ("spans ending past their document's text", report.spans_beyond_text),
        ]
    )


def _named(count: int, ids: Sequence[str]) -> str:
    """``3 (a, b, c)``: a count with the first ids behind it (escaped by :func:`_pairs`)."""
    return f"{count:,}" + (f" ({first_ids(ids)})" if count and ids else "")


def _settings(report: SweepReport) -> str:
    grid = report.grid
    sizes = "; ".join(f"{c}: {', '.join(map(str, grid.sizes_of(c)))}" for c in grid.chunkers)
    return _pairs(
        [
            ("chunkers", ", ".join(grid.chunkers)),
            ("chunk sizes (tokens; characters for paragraph)", sizes),
            ("modes", ", ".join(grid.modes)),
            ("packers", ", ".join(grid.packers)),
            ("budgets (tokens)", ", ".join(f"{b:,}" for b in grid.budgets)),
            ("stop rules", ", ".join(grid.stops)),
            ("stop calibration", report.stop_calibration or "-"),
            ("tokenizer", grid.tokenizer),
            ("framing counted in the budget", grid.format),
            ("ranking metrics", f"{', '.join(report.metrics)} ({report.level} level)"),
            ("knee metric", f"{report.knee_metric}@Bt"),
            (
                "δ = gain per 1k × (1 + (T − 1) × c)",
                f"{report.gain_per_1k:g} × (1 + ({report.turns} − 1) × {report.cache_factor:g})"
                f" = {report.delta:.4f} per 1,000 tokens",
            ),
            ("ties within ε", f"{report.epsilon:g} (absolute {report.knee_metric})"),
            ("turns T, cache factor c", f"{report.turns}, {report.cache_factor:g}"),
            ("configurations measured / reused", f"{report.computed} / {report.reused}"),
            ("wall time", f"{report.seconds:.1f} s"),
            ("results folder", report.out),
        ]
    )


def render_html(report: SweepReport, images: Mapping[str, bytes]) -> str:
    """Render the sweep as one self-contained HTML page with ``images`` inlined."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ctxselect sweep: {_e(report.dataset)}</title><style>{_STYLE}</style></head>",
        f"<body><h1>ctxselect sweep: {_e(report.dataset)}</h1>",
        f"<p>{_e(describe(report))}</p>",
        f'<p class="recommend">{_e(recommendation(report))}</p>',
        "<h2>Trade-off</h2>",
        "<ul>" + "".join(f"<li>{_e(line)}</li>" for line in report.trade_offs) + "</ul>",
        f'<p class="rule"><strong>The knee.</strong> {_e(KNEE_RULE)} Here δ = '
        f"{report.delta:.4f} and ε = {report.epsilon:g}.</p>",
        "<h2>Knee per configuration</h2>",
        _table([knee_row(c) for c in report.curves]),
        "<h2>Plots</h2>",
        *(_image(name, png) for name, png in images.items()),
        "<h2>Cost of re-sent tokens</h2>",
        f'<p class="rule">{_e(COST_RULE)} Configuration {_e(report.recommended_configuration)},'
        f" knee {report.recommended.budget} tokens, T = {report.turns} turns.</p>",
        f"<h3>With a prompt cache (c = {report.cache_factor:g})</h3>",
        _table(report.costs),
    ]
    if report.cache_factor != 1.0:
        parts += ["<h3>Without a prompt cache (c = 1)</h3>", _table(report.uncached)]
    parts += [
        "<h2>Chunk-size sweep</h2>",
        f"<p>Ranking metrics at {_e(report.level)} level; top-1 correct is hit@1.</p>",
        _table(report.sizes),
        "<h2>Budget tables</h2>",
        "<p>hit@Bt is the share of queries with a relevant document selected; recall@Bt the "
        f"mean fraction of relevant {_e(report.label_kind)} selected. gain/1k tok is the "
        f"{_e(report.knee_metric)} gained per 1,000 tokens since the budget in the row "
        "above.</p>",
    ]
    for curve in report.curves:
        parts += [f"<h3>{_e(curve.label)}</h3>", _table(curve.points)]
    parts += [
        "<h2>Dataset</h2>",
        _dataset(report),
        "<h2>Settings</h2>",
        _settings(report),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_sweep_files(
    report: SweepReport, folder: str | Path, images: Mapping[str, bytes]
) -> SweepReport:
    """Write ``tables.txt``, the PNG ``images`` and ``report.html`` into ``folder``.

    Returns:
        The report with ``files`` naming everything the folder holds for it.

    Raises:
        InputError: A file cannot be written.
    """
    folder = Path(folder)
    written = {"tables.txt": sweep_tables(report).encode("utf-8"), **images}
    written["report.html"] = render_html(report, images).encode("utf-8")
    for name, data in written.items():
        try:
            (folder / name).write_bytes(data)
        except OSError as exc:
            raise InputError(f"cannot write {folder / name}: {exc.strerror}") from None
    files = tuple(str(folder / name) for name in (RESULTS_FILE, *written))
    return dataclasses.replace(report, files=files)

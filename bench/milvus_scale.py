"""The Milvus store at scale, next to the embedded store, in one run (issue 13, item 6).

The synthetic corpus of ``bench/store_scale.py`` (SciFact sentences recombined, two per
chunk, ten chunks per document; ``--chunks`` chunks, 1,000,000 by default) is indexed
(BM25, no embedder) into a Milvus Lite 2.5.1 server started here on 127.0.0.1 and into
the embedded store. Then, for each store and for 1 and 8 concurrent clients (threads of
one process sharing one opened index; the 300 SciFact test queries each, k = 10, mode
``bm25``: served by Milvus, client-side in the embedded store), it measures queries/s,
p50/p95 latency, and memory: the Milvus server's RSS (the ``milvus`` process and its
children, through psutil) and each querying process's own RSS and peak.

Every step runs in its own subprocess (its peak RSS is its own). Prints JSON lines and a
markdown table; never asserts.

    .venv/bin/python bench/milvus_scale.py [--chunks 100000] [--write-docs]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import store_scale  # its corpus generator and chunk settings
from _common import REPO, replace_section

DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- milvus-scale:start -->", "<!-- milvus-scale:end -->"
K = 10
CLIENTS = (1, 8)
NAME = "scale"


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6, 1)  # KiB


def _rss_mb(pid: int | None = None) -> float:
    """RSS of ``pid`` and its children (this process: itself), in MB."""
    import psutil  # the server's RSS needs another process's figures

    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)] if pid is not None else [proc]
    return round(sum(p.memory_info().rss for p in procs) / 1e6, 1)


def _bm25() -> Any:
    """Default BM25 with the analysis options Milvus's analyzer lacks off, so the server
    ranks ``bm25`` itself (docs/14-milvus.md)."""
    import dataclasses

    import ctxselect as cs

    names = {f.name for f in dataclasses.fields(cs.BM25Params)}
    return cs.BM25Params(**({"identifiers": False} if "identifiers" in names else {}))


def _index(args: argparse.Namespace) -> str:
    return args.uri if args.store == "milvus" else str(Path(args.work) / "ix")


# -- children -----------------------------------------------------------------------


def build(args: argparse.Namespace) -> dict[str, Any]:
    """Index the corpus into one store; time, size and this process's peak memory."""
    import ctxselect as cs

    index = _index(args)
    started = time.perf_counter()
    report = cs.index_paths(
        [Path(args.work) / "corpus.jsonl"], index, chunk=store_scale._spec(), bm25=_bm25()
    )
    seconds = time.perf_counter() - started
    with cs.open_index(index) as idx:
        stored = idx.store.disk_bytes()
    record = {
        "step": f"{args.store}-build",
        "chunks": report.chunks,
        "documents": report.documents,
        "build_s": round(seconds, 1),
        "chunks_per_s": round(report.chunks / seconds, 1),
        "stored_mb": round(stored / 1e6, 1),
        "peak_rss_mb": _peak_mb(),
    }
    folder = Path(args.work) / ("milvus" if args.store == "milvus" else "ix")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    record["folder_mb"] = round(size / 1e6, 1)  # the server's data folder: all it keeps
    record["folder_bytes_per_chunk"] = round(size / max(1, report.chunks))
    if args.server_pid:
        record["server_rss_mb"] = _rss_mb(args.server_pid)
    return record


def _run(idx: Any, queries: list[str], clients: int) -> tuple[float, list[float]]:
    """Run every query once over ``clients`` threads; (wall seconds, latencies)."""

    def one(query: str) -> float:
        started = time.perf_counter()
        idx.search(query, K, "bm25")
        return time.perf_counter() - started

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(one, queries))
    return time.perf_counter() - started, latencies


def query(args: argparse.Namespace) -> dict[str, Any]:
    """Queries/s and latency with 1 and 8 concurrent clients, and memory."""
    import ctxselect as cs

    queries = store_scale._queries()
    baseline = _rss_mb()
    started = time.perf_counter()
    idx = cs.open_index(_index(args))
    served = type(idx.retriever("bm25")).__name__
    idx.search("warm up", K, "bm25")
    record: dict[str, Any] = {
        "step": f"{args.store}-query",
        "queries": len(queries),
        "retriever": served,
        "open_s": round(time.perf_counter() - started, 2),
        "baseline_rss_mb": baseline,
    }
    for clients in CLIENTS:
        runs = [_run(idx, queries, clients) for _ in range(max(1, args.repeats))]
        seconds, latencies = min(runs, key=lambda run: run[0])
        cuts = statistics.quantiles(latencies, n=20)
        record[f"qps_{clients}"] = round(len(queries) / seconds, 1)
        record[f"p50_ms_{clients}"] = round(statistics.median(latencies) * 1000, 2)
        record[f"p95_ms_{clients}"] = round(cuts[18] * 1000, 2)
    record["rss_mb"] = _rss_mb()
    record["peak_rss_mb"] = _peak_mb()
    if args.server_pid:
        record["server_rss_mb"] = _rss_mb(args.server_pid)
    idx.close()
    return record


def gen(args: argparse.Namespace) -> dict[str, Any]:
    return store_scale.gen(Path(args.work), max(1, args.chunks // store_scale.PER_DOC))


CHILDREN = {"gen": gen, "build": build, "query": query}


def spawn(step: str, args: argparse.Namespace, store: str = "") -> dict[str, Any]:
    """Run one step in a fresh interpreter and return its JSON record."""
    cmd = [sys.executable, __file__, "--child", step, "--work", str(args.work)]
    cmd += ["--chunks", str(args.chunks), "--repeats", str(args.repeats)]
    pid = args.server_pid if store == "milvus" else 0  # the server's RSS: Milvus rows only
    cmd += ["--store", store, "--uri", args.uri, "--server-pid", str(pid)]
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if out.returncode != 0:
        return {"step": f"{store}-{step}" if store else step, "error": out.stderr[-800:]}
    record: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    record["wall_s"] = round(time.perf_counter() - started, 1)
    return record


# -- report -------------------------------------------------------------------------


def table(records: list[dict[str, Any]]) -> str:
    """One markdown table: a row per store."""
    by = {r["step"]: r for r in records}
    rows = [
        "| | embedded store | Milvus Lite 2.5.1 (served bm25) |",
        "|---|---|---|",
    ]

    def row(label: str, step: str, key: str) -> str:
        cells = [str(by.get(f"{s}-{step}", {}).get(key, "-")) for s in ("embedded", "milvus")]
        return f"| {label} | {' | '.join(cells)} |"

    rows.append(row("chunks", "build", "chunks"))
    rows.append(row("load (index) time, s", "build", "build_s"))
    rows.append(row("load, chunks/s", "build", "chunks_per_s"))
    rows.append(row("stored MB (`disk_bytes`)", "build", "stored_mb"))
    rows.append(row("data folder MB (index folder / server data)", "build", "folder_mb"))
    rows.append(row("data folder bytes per chunk", "build", "folder_bytes_per_chunk"))
    rows.append(row("loading process peak RSS, MB", "build", "peak_rss_mb"))
    rows.append(row("open + first query, s", "query", "open_s"))
    for clients in CLIENTS:
        rows.append(row(f"queries/s, {clients} client(s)", "query", f"qps_{clients}"))
        rows.append(row(f"p50 ms, {clients} client(s)", "query", f"p50_ms_{clients}"))
        rows.append(row(f"p95 ms, {clients} client(s)", "query", f"p95_ms_{clients}"))
    rows.append(row("querying process RSS after, MB", "query", "rss_mb"))
    rows.append(row("querying process peak RSS, MB", "query", "peak_rss_mb"))
    milvus = by.get("milvus-query", {}).get("server_rss_mb", "-")
    built = by.get("milvus-build", {}).get("server_rss_mb", "-")
    rows.append(f"| Milvus server RSS after load / after queries, MB | - | {built} / {milvus} |")
    return "\n".join(rows)


def docs_section(records: list[dict[str, Any]], command: str) -> str:
    gen_record = next((r for r in records if r.get("step") == "gen"), {})
    return (
        f"Measured {dt.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, with `{command}` "
        f"(corpus: {gen_record.get('docs', '?')} documents, {gen_record.get('corpus_mb', '?')} "
        f"MB). Clients are threads of one process sharing one opened index; each "
        f"runs its share of the 300 SciFact test queries, k = 10, mode `bm25` (best of "
        f"the repeats). The server runs on the same machine as its clients.\n\n"
        f"{table(records)}\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--store", default="", help=argparse.SUPPRESS)
    parser.add_argument("--uri", default="", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--work", default=None, help="working folder (default: a temp folder)")
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    from ctxselect.stores.milvus.server import MilvusServer

    made = args.work is None
    args.work = Path(args.work or tempfile.mkdtemp(prefix="ctxselect-milvus-scale-"))
    args.work.mkdir(parents=True, exist_ok=True)
    records = [spawn("gen", args)]
    print(json.dumps(records[-1]), flush=True)
    try:
        with MilvusServer(args.work / "milvus") as server:
            pid = server.process.pid if server.process is not None else 0
            args.uri, args.server_pid = f"{server.uri}/{NAME}", pid
            records.append({"step": "milvus-server", "idle_rss_mb": _rss_mb(args.server_pid)})
            print(json.dumps(records[-1]), flush=True)
            for store in ("embedded", "milvus"):
                for step in ("build", "query"):
                    records.append(spawn(step, args, store))
                    print(json.dumps(records[-1]), flush=True)
    finally:
        if made and not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
    print()
    print(table(records))
    if args.write_docs:
        command = "python bench/milvus_scale.py " + " ".join(argv or sys.argv[1:])
        replace_section(DOCS, START, END, docs_section(records, command.strip()))


if __name__ == "__main__":
    main()

"""Parallel ingestion: chunks/s of ``index_paths`` with minilm for 1 and 2 workers,
local process pool and Ray, on a fixed sample of SciFact, in one run, cold and warm.

Each configuration builds a fresh index (empty vector cache: every chunk is embedded)
from the first ``--docs`` documents of SciFact with the default chunking and
``embedder="minilm"``. The time is the whole ``index_paths`` call: scan, chunking,
embedding, writes; a cold run also starts the workers and loads the model in each (and,
for Ray, starts a local Ray on 127.0.0.1), a warm run is a second fresh index on the same
executor. ``local`` with 1 worker is the serial path (no pool). Prints one JSON line
per configuration, then a table. Never asserts.

    .venv/bin/python bench/ingest_workers.py [--docs 1000] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, datasets_root, replace_section

DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- ingest-workers:start -->", "<!-- ingest-workers:end -->"
CONFIGS = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2))


def sample(docs: int, folder: Path) -> Path:
    """Write the first ``docs`` documents of SciFact as a BEIR corpus file in ``folder``."""
    source = datasets_root() / "scifact" / "corpus.jsonl"
    with open(source, encoding="utf-8") as handle:
        rows = [line for _, line in zip(range(docs), handle, strict=False)]
    target = folder / "corpus.jsonl"
    target.write_text("".join(rows), encoding="utf-8")
    return target


def run_one(corpus: Path, folder: Path, executor: str, workers: int) -> dict[str, Any]:
    """Index ``corpus`` twice, each into a fresh index, on the same workers; time both.

    The first (cold) run starts the workers and loads the model in each; the second
    (warm) finds them running, so it shows the throughput of a long ingestion.
    """
    import ctxselect as cs
    from ctxselect.ingest import Executor, LocalExecutor, RayExecutor

    ray_temp = tempfile.mkdtemp(prefix="ctxray", dir="/tmp")  # Ray's socket paths stay short
    made: Executor | None = None
    if executor == "ray":
        made = RayExecutor(workers, temp_dir=ray_temp)
    elif workers > 1:
        made = LocalExecutor(workers)
    seconds, chunks, docs = [], 0, 0
    try:
        for run in ("cold", "warm"):
            started = time.perf_counter()
            report = cs.index_paths(
                [corpus], folder / f"ix-{executor}-{workers}-{run}", embedder="minilm",
                executor=made or executor,
            )  # fmt: skip
            seconds.append(time.perf_counter() - started)
            chunks, docs = report.chunks, report.documents
    finally:
        if made is not None:
            made.close()
        shutil.rmtree(ray_temp, ignore_errors=True)
    return {
        "executor": executor,
        "workers": workers,
        "documents": docs,
        "chunks": chunks,
        "cold_s": round(seconds[0], 2),
        "cold_chunks_per_s": round(chunks / seconds[0], 1),
        "warm_s": round(seconds[1], 2),
        "warm_chunks_per_s": round(chunks / seconds[1], 1),
    }


def machine() -> str:
    """One line naming the machine, the Python and the library versions."""
    import ray
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text() if cpuinfo.is_file() else ""
    cpu = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if "model name" in ln), "")
    return (
        f"{cpu or platform.machine()}, {os.cpu_count()} cores (shared with other work, so "
        f"figures are noisy), Python {platform.python_version()}, torch {torch.__version__}, "
        f"ray {ray.__version__}"
    )


def to_markdown(rows: list[dict[str, Any]], docs: int, command: str) -> str:
    """The section that goes between the markers in docs/benchmarks.md."""
    serial = next(r for r in rows if r["executor"] == "local" and r["workers"] == 1)
    lines = [
        "## Parallel ingestion (workers)",
        "",
        f"Measured {dt.date.today().isoformat()} on {machine()}. `index_paths([corpus.jsonl], "
        'DIR, embedder="minilm", workers=N, executor=E)` on the first '
        f"{docs:,} SciFact documents (default chunking), a fresh index each run (every chunk "
        "embedded, no vector cache), all in one run. The time is the whole call: scan, "
        "chunking, embedding, writes. Cold: the first run on a new executor, which starts "
        "the workers and loads the model in each (and starts a local Ray on 127.0.0.1). "
        "Warm: a second fresh index on the same executor (workers up, model loaded), the "
        "rate of a long ingestion. local with 1 worker is the serial path (no pool; the "
        "model loads in every run, as both runs call `index_paths` anew).",
        "",
        "| executor | workers | chunks | cold s | cold chunks/s | warm s | warm chunks/s "
        "| warm vs serial |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = r["warm_chunks_per_s"] / serial["warm_chunks_per_s"]
        lines.append(
            f"| {r['executor']} | {r['workers']} | {r['chunks']:,} | {r['cold_s']:.1f} "
            f"| {r['cold_chunks_per_s']:.1f} | {r['warm_s']:.1f} | {r['warm_chunks_per_s']:.1f} "
            f"| {ratio:.2f}x |"
        )
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main() -> None:
    """Run every configuration on the same sample; print JSON lines and the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000, help="SciFact documents (first N)")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ingest-workers-") as tmp:
        corpus = sample(args.docs, Path(tmp))
        for executor, workers in CONFIGS:
            row = run_one(corpus, Path(tmp), executor, workers)
            print(json.dumps(row), flush=True)
            rows.append(row)
    command = "python bench/ingest_workers.py " + " ".join(sys.argv[1:])
    table = to_markdown(rows, args.docs, command.strip())
    print(table)
    if args.write_docs:
        replace_section(DOCS, START, END, table)
        print(f"wrote {DOCS}", file=sys.stderr)


if __name__ == "__main__":
    main()

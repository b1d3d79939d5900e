"""Exact cl100k counters side by side: same counts as tiktoken? how fast? how much memory?

A keyword build spends most of its time counting tokens (docs/benchmarks.md, "Where the
build time goes"). This measures the counters that claim tiktoken's exact cl100k counts:
tiktoken itself (through ``ctxselect.tokens.bpe``, as every build counts), and, when found,
bpe-openai and rs-bpe. They are not dependencies of ctxselect; install them into a folder
of their own and name it with ``--site``:

    pip install --target /tmp/counters bpe-openai rs-bpe
    .venv/bin/python bench/token_counters.py --site /tmp/counters

Texts: every document (title + text) of SciFact and NFCorpus and every ``.py`` file under
``src/`` (code). Each counter runs in its own process, single-threaded: load seconds (first
count included), count seconds over all texts (best of ``--repeats``), RSS added by loading,
and how many texts it counts differently from tiktoken. ``--build`` also times
``build_index`` on SciFact (one chunk per document, as ``bench/bm25_peers.py`` ``ours``)
with the counter in tiktoken's place, against tantivy's build in the same run. Prints JSON
lines and a markdown table; never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, best_of, datasets_root, load_beir

COUNTERS = ("tiktoken", "bpe-openai", "rs-bpe")


def texts() -> list[str]:
    """The texts every counter counts, in a fixed order."""
    out = []
    for dataset in ("scifact", "nfcorpus"):
        corpus, _queries, _qrels = load_beir(dataset)
        out += [f"{d['title']}\n{d['text']}" for d in corpus]
    out += [p.read_text(encoding="utf-8") for p in sorted((REPO / "src").rglob("*.py"))]
    return out


def load_counter(name: str) -> Callable[[str], int]:
    """Return ``text -> exact cl100k count`` for ``name`` (its encoding loaded)."""
    if name == "tiktoken":
        from ctxselect.tokens.bpe import CL100K_OFFLINE, load_encoding

        encode = load_encoding(CL100K_OFFLINE).encode_ordinary
        return lambda text: len(encode(text))
    if name == "bpe-openai":
        from bpe_openai import _bindings

        return _bindings.tokenizer_for_encoding("cl100k_base").count
    from rs_bpe.bpe import openai

    return openai.cl100k_base().count


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _build_seconds(count: Callable[[str], int]) -> float:
    """``build_index`` on SciFact with ``count`` as ctxselect's cl100k counter."""
    import ctxselect as cs
    from ctxselect.tokens import bpe

    bpe.TiktokenCounter.count = lambda self, text: count(text)
    bpe.TiktokenCounter.count_many = lambda self, ts: [count(t) for t in ts]
    corpus_file = datasets_root() / "scifact" / "corpus.jsonl"
    spec = cs.ChunkSpec(chunker="tokens", size=8192)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        cs.build_index([corpus_file], folder, chunk=spec).search("warm up", 10)
        return time.perf_counter() - started


def _tantivy_build_seconds() -> float:
    """tantivy's build of SciFact, exactly as ``bench/bm25_peers.py`` builds it."""
    from bm25_peers import _tantivy

    corpus, _queries, _qrels = load_beir("scifact")
    started = time.perf_counter()
    _tantivy(corpus, "scifact")
    return time.perf_counter() - started


def run_child(name: str, repeats: int, folder: Path, build: bool) -> dict[str, Any]:
    """Measure one counter in this process on the texts saved in ``folder``."""
    if name == "tantivy":
        return {"counter": "tantivy", "build_s": round(_tantivy_build_seconds(), 3)}
    items = json.loads((folder / "texts.json").read_text())
    reference = folder / "tiktoken-counts.json"
    before = _rss_mb()
    started = time.perf_counter()
    count = load_counter(name)
    count("warm up")
    load_s = time.perf_counter() - started
    added = _rss_mb() - before
    seconds, counts = best_of(repeats, lambda: [count(t) for t in items])
    record: dict[str, Any] = {
        "counter": name,
        "texts": len(items),
        "load_s": round(load_s, 3),
        "count_s": round(seconds, 3),
        "rss_added_mb": round(added, 1),
    }
    if name == "tiktoken":
        reference.write_text(json.dumps(counts))
        record["tokens"] = sum(counts)
    else:
        expected = json.loads(reference.read_text())
        record["differ"] = sum(a != b for a, b in zip(counts, expected, strict=True))
    if build:
        record["build_s"] = round(_build_seconds(count), 3)
    return record


def spawn(name: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; a counter that is not installed says so."""
    cmd = [sys.executable, __file__, "--child", name, "--repeats", str(args.repeats)]
    cmd += ["--folder", str(folder)] + (["--build"] if args.build else [])
    env = dict(os.environ)
    if args.site:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), args.site]))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"counter": name, "error": out.stderr.strip().splitlines()[-1][:200]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(records: list[dict[str, Any]]) -> str:
    """Render the records as a markdown table."""
    lines = [
        "| counter | load s | count s | RSS added MB | texts counted differently | build s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['counter']} | not measured: {r['error']} |||||")
        elif r["counter"] == "tantivy":
            lines.append(f"| tantivy (whole build) | | | | | {r['build_s']:.2f} |")
        else:
            build = f"{r['build_s']:.2f}" if "build_s" in r else ""
            lines.append(
                f"| {r['counter']} | {r['load_s']:.3f} | {r['count_s']:.3f} | "
                f"{r['rss_added_mb']:.0f} | {r.get('differ', 0)} of {r['texts']:,} | {build} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--site", help="a folder holding bpe-openai and rs-bpe (pip --target)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--build", action="store_true", help="also time build_index on SciFact")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.child, args.repeats, args.folder, args.build)))
        return
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "texts.json").write_text(json.dumps(texts()))  # one list for every counter
        names = list(COUNTERS) + (["tantivy"] if args.build else [])
        records = []
        for name in names:
            record = spawn(name, args, folder)
            print(json.dumps(record), flush=True)
            records.append(record)
    print()
    print(table(records))


if __name__ == "__main__":
    main()

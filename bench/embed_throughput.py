"""MiniLM runtimes side by side: chunks/s, where the time goes, vectors and nDCG@10.

Throughput: a fresh sample of SciFact documents (one chunk each, cut at the model's 256
word pieces, as an index embeds them) through today's path (sentence-transformers on
torch, float32) and the others, in turns, best of ``--rounds``; the cosine of each
runtime's vectors with today's. Split: tokenizing (the model's ``tokenizer.json``), the
rest (forward pass, pooling). With ``--quality``: the whole of SciFact indexed with
float32 vectors (from the bench's vector cache when present) and with bfloat16 ones, and
nDCG@10 of dense and of tuned hybrid (out of sample, 5 folds) on each. Never asserts.

    .venv/bin/python bench/embed_throughput.py [--sample 256] [--rounds 3] [--quality]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import datasets_root

CACHE = Path(__file__).resolve().parents[1] / ".bench-cache" / "vectors"


def _sample(size: int) -> list[str]:
    """Every n-th SciFact document as an index embeds it (title, newline, text)."""
    path = datasets_root() / "scifact" / "corpus.jsonl"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [json.loads(line) for line in lines[:: max(1, len(lines) // size)][:size]]
    return [f"{d['title']}\n{d['text']}" for d in docs]


def runtimes() -> dict[str, Callable[[Sequence[str]], np.ndarray]]:
    """Name -> embed passages: today's path first, then the alternatives."""
    from ctxselect.embed.minilm import MiniLMEmbedder

    fp32 = MiniLMEmbedder(precision="fp32")
    bf16 = MiniLMEmbedder(precision="bf16")
    return {
        "torch fp32 (before)": fp32.embed,
        "torch bf16 (after)": bf16.embed,
        "numpy fp32 (queries)": lambda texts: fp32.embed(texts, query=True),
    }


def throughput(texts: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """chunks/s of each runtime (best of ``rounds``, in turns) and its cosine to today's."""
    from ctxselect.embed.minilm import MAX_TOKENS, model_dir

    tokenizers = __import__("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(model_dir(), "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    started = time.perf_counter()
    pieces = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    tokenize_s = time.perf_counter() - started
    calls = runtimes()
    for call in calls.values():
        call(texts[:4])  # load each model before timing
    best: dict[str, float] = dict.fromkeys(calls, 0.0)
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            vectors[name] = call(texts)
            best[name] = max(best[name], len(texts) / (time.perf_counter() - started))
    reference = vectors[next(iter(calls))]
    out = {}
    for name in calls:
        cosines = (vectors[name] * reference).sum(axis=1)
        share = tokenize_s * best[name] / len(texts)
        out[name] = {"chunks_s": best[name], "cos_min": float(cosines.min()), "tokenize": share}
    print(
        f"sample: {len(texts)} SciFact documents, {np.mean(pieces):.0f} word pieces on "
        f"average, {np.mean(np.array(pieces) == MAX_TOKENS):.0%} cut at {MAX_TOKENS}; "
        f"tokenizing all of them: {tokenize_s * 1000:.0f} ms"
    )
    return out


def quality() -> dict[str, dict[str, float]]:
    """nDCG@10 of dense and tuned hybrid on SciFact, float32 vs bfloat16 passage vectors."""
    from ctxselect import open_index
    from ctxselect.embed import CachedEmbedder, FileVectorCache, MemoryVectorCache
    from ctxselect.embed.minilm import MiniLMEmbedder
    from ctxselect.eval import evaluate, load_qrels, read_queries
    from dense_hybrid import _index, _out_of_sample

    folder = datasets_root() / "scifact"
    qrels = load_qrels(folder / "qrels" / "test.tsv")
    queries = {q: t for q, t in read_queries(folder / "queries.jsonl").items() if q in qrels}
    caches: dict[str, Any] = {"fp32": FileVectorCache(CACHE), "bf16": MemoryVectorCache()}
    out = {}
    with tempfile.TemporaryDirectory(prefix="embed-quality-") as tmp:
        for precision, cache in caches.items():
            model = MiniLMEmbedder(precision=precision)
            where = Path(tmp) / precision
            _, seconds = _index(folder / "corpus.jsonl", where, CachedEmbedder(model, cache))
            with open_index(where, embedder=model) as idx:
                dense = idx.search_many(queries, 100, "dense")
                tuned, _ = _out_of_sample(idx, queries, qrels)
                out[precision] = {
                    "dense": _ndcg(evaluate, dense, qrels),
                    "hybrid-tuned": _ndcg(evaluate, tuned, qrels),
                    "index_s": seconds,
                }
            print(precision, json.dumps(out[precision]), flush=True)
    return out


def _ndcg(evaluate: Any, hits: dict[str, list[Any]], qrels: Any) -> float:
    run = {q: {h.doc_id: float(len(r) - i) for i, h in enumerate(r)} for q, r in hits.items()}
    return float(evaluate(run, qrels, ["ndcg@10"]).mean["ndcg@10"])


def main() -> None:
    """Print the table (and the quality figures with ``--quality``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quality", action="store_true")
    args = parser.parse_args()
    rows = throughput(_sample(args.sample), args.rounds)
    base = next(iter(rows.values()))["chunks_s"]
    print("| runtime | chunks/s | x before | tokenizing share | cos min vs before |")
    print("|---|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['chunks_s']:.1f} | {r['chunks_s'] / base:.2f} | "
            f"{r['tokenize']:.1%} | {r['cos_min']:.6f} |"
        )
    print(json.dumps({"throughput": rows}))
    if args.quality:
        print(json.dumps({"quality": quality()}))


if __name__ == "__main__":
    main()

"""Embedding whole chunks: MiniLM truncated at 256 word pieces vs pooled windows.

For each chunk size (512 first, then 256, then 128) and each of SciFact, NFCorpus and
Cranfield: index the corpus with ``chunker="tokens"`` at that size and the minilm embedder
truncating (before), count the chunks longer than the model reads, and, where any is,
index again with windows (after). Dense and out-of-sample tuned-hybrid nDCG@10 (documents
ranked by their best chunk; hybrid-tuned as bench/dense_hybrid.py: each query ranked by
what ``tune_fusion``'s one-SE rule chose on the other 4 folds). Window vectors are plain
MiniLM vectors of the window texts, so they share the content-hash cache in
.bench-cache/vectors with every other benchmark; a re-run embeds nothing new. Each cell
is appended to .bench-cache/embed_windows.jsonl as it finishes; done cells are skipped.
Never asserts.

    .venv/bin/python bench/embed_windows.py [--sizes 512,256,128] [--overlap 0] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, datasets_root, replace_section
from dense_hybrid import _out_of_sample

DATASETS = ("scifact", "nfcorpus", "cranfield")
SIZES = (512, 256, 128)
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- embed-windows:start -->", "<!-- embed-windows:end -->"
CACHE = REPO / ".bench-cache" / "vectors"
RESULTS = REPO / ".bench-cache" / "embed_windows.jsonl"
DEPTH = 100
DECISION = (
    "Decision: an index's default is `auto` (`ctxselect index --embed-long auto`, "
    '`index_paths(embed_long="auto")`, `embed_long = "auto"` in `ctxselect.toml`): the '
    "write that first embeds an index chooses `windows` when most of its chunks are code "
    '(windows won on every package in "Code retrieval: embedding long chunks whole") and '
    '`truncate` otherwise, so a prose index keeps the "before" vectors and model id of this '
    "table; `--embed-long windows` or `truncate` still decide, and "
    '`make_embedder("minilm")` truncates unless told. On prose, dense nDCG@10 rose in every '
    "cell re-run, by 0.002 to 0.006, but tuned hybrid, the mode `ctxselect tune` makes the "
    "default, fell on SciFact at both sizes (by more than the 0.003 that bf16 against fp32 "
    "vectors moved it in the runtime section) and rose by at most 0.004 elsewhere, while "
    "the embedding work grows with the windows (1.75x the chunks at 512 on SciFact, 1.83x "
    "on NFCorpus): it does not pay as a default for prose. Where dense is used alone on "
    "long chunks, or where chunks run far past the limit (code, many word pieces per token; "
    "not measured here), windows are the better choice. Overlap: 32 shared word pieces did "
    "not help where measured (table above), so windows do not overlap. The index records "
    "the policy in its model id (`... [windows 256 mean]`), so windowed and truncated "
    "vectors never mix in a cache or an index; every index keeps embedding and searching as "
    "it was built, and `ctxselect info` says how (`embed_long = windows of 256 word pieces, "
    "mean-pooled` or `truncated at 256 word pieces`, followed by `(auto: 412 of 530 chunks "
    "are code)` where auto chose). Passage vectors came partly from torch fp32 and partly "
    "from the bf16 runtime of the section above (same model id, cosine ≥ 0.9999): whichever "
    "ran when a vector was first needed."
)
THREADS = 2


def _doc_ndcg(hits: dict[str, list[Any]], qrels: Any) -> float:
    """nDCG@10 of the documents, each ranked by its best chunk."""
    from ctxselect.eval import evaluate

    run: dict[str, dict[str, float]] = {}
    for qid, ranked in hits.items():
        run[qid] = {}
        for i, h in enumerate(ranked):
            run[qid].setdefault(h.doc_id, float(len(ranked) - i))
    return float(evaluate(run, qrels, ["ndcg@10"]).mean["ndcg@10"])


def _scores(folder: Path, model: Any, queries: dict[str, str], qrels: Any) -> dict[str, float]:
    from ctxselect import open_index

    with open_index(folder, embedder=model) as idx:
        out = {m: _doc_ndcg(idx.search_many(queries, DEPTH, m), qrels) for m in ("bm25", "dense")}
        tuned, _ = _out_of_sample(idx, queries, qrels)
        out["hybrid-tuned"] = _doc_ndcg(tuned, qrels)
    return out


def _index(corpus: Path, folder: Path, size: int, embedder: Any) -> tuple[int, float]:
    from ctxselect import ChunkSpec
    from ctxselect.api.write import index_paths

    started = time.perf_counter()
    chunk = ChunkSpec(chunker="tokens", size=size)
    report = index_paths([corpus], folder, chunk=chunk, embedder=embedder)
    return report.chunks, time.perf_counter() - started


def long_chunks(corpus: Path, size: int, windowed: Any) -> dict[str, int]:
    """Chunks at ``size``, those over the model's limit, and the windows of all of them."""
    from ctxselect import ChunkSpec, chunk_file
    from ctxselect.index.writer import indexed_text

    chunks = chunk_file(corpus, ChunkSpec(chunker="tokens", size=size))
    counts = [len(s) for s in windowed.windows.spans([indexed_text(c) for c in chunks])]
    return {
        "chunks": len(counts),
        "long_chunks": sum(c > 1 for c in counts),
        "windows": sum(counts),
        "max_windows": max(counts, default=0),
    }


def cell(name: str, size: int, inner: Any, windowed: Any, cache: Any) -> dict[str, Any]:
    """Before and after figures of one dataset and size (none where no chunk is over the
    limit: there, after = before by construction)."""
    from ctxselect.embed import CachedEmbedder
    from ctxselect.eval import load_qrels, read_queries

    folder = datasets_root() / name
    corpus = folder / "corpus.jsonl"
    qrels = load_qrels(folder / "qrels" / "test.tsv")
    queries = {q: t for q, t in read_queries(folder / "queries.jsonl").items() if q in qrels}
    row: dict[str, Any] = {"dataset": name, "size": size, "queries": len(queries)}
    row.update(long_chunks(corpus, size, windowed))
    print(
        f"{name} @{size}: {row['chunks']} chunks, {row['long_chunks']} need >1 window "
        f"({row['windows']} windows)",
        file=sys.stderr,
        flush=True,
    )
    row["before"] = row["after"] = None
    if not row["long_chunks"]:
        return row
    with tempfile.TemporaryDirectory(prefix=f"windows-{name}-{size}-") as tmp:
        truncating = CachedEmbedder(inner, cache, progress=True)
        _, row["before_s"] = _index(corpus, Path(tmp) / "before", size, truncating)
        row["before"] = _scores(Path(tmp) / "before", inner, queries, qrels)
        _, row["after_s"] = _index(corpus, Path(tmp) / "after", size, windowed)
        row["after"] = _scores(Path(tmp) / "after", windowed, queries, qrels)
    return row


def _done() -> dict[tuple[str, int, str], dict[str, Any]]:
    if not RESULTS.is_file():
        return {}
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    return {(r["dataset"], r["size"], r["policy"]): r for r in rows}


def run(sizes: Sequence[int], datasets: Sequence[str], overlap: int) -> None:
    """Measure every missing cell, largest chunks first, appending each to RESULTS."""
    from ctxselect.embed import CachedEmbedder, FileVectorCache, make_embedder
    from ctxselect.embed.windows import WindowedEmbedder, WindowPolicy, _minilm_tokenizer

    cache = FileVectorCache(CACHE)
    inner = make_embedder("minilm", embed_long="truncate", threads=THREADS)
    policy = WindowPolicy(256, overlap)
    windowed = WindowedEmbedder(CachedEmbedder(inner, cache), policy, _minilm_tokenizer)
    done = _done()
    for size in sizes:
        for name in datasets:
            if (name, size, windowed.model_id) in done:
                continue
            started = time.perf_counter()
            row = cell(name, size, inner, windowed, cache)
            row.update(
                policy=windowed.model_id, overlap=overlap, seconds=time.perf_counter() - started
            )
            print(json.dumps(row), flush=True)
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            with RESULTS.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")


def to_markdown(rows: list[dict[str, Any]], others: list[dict[str, Any]], command: str) -> str:
    """Render the section that goes between the markers (``others``: other overlaps)."""
    lines = [
        "## Embedding whole chunks",
        "",
        "MiniLM (all-MiniLM-L6-v2) reads at most 256 word pieces. before: chunks truncated "
        "there (the default); after: a chunk over the limit is cut at "
        "word-piece boundaries (the model's own tokenizer.json, offsets; a window ends at a "
        "word end where one is in its second half) into windows of at most 256 pieces, "
        "special tokens included, no overlap, each window embedded, the window vectors "
        "averaged weighted by their pieces and scaled to unit length (`embed/windows.py`). "
        'Indexes: `index_paths([corpus.jsonl], DIR, chunk=ChunkSpec(chunker="tokens", '
        "size=S), embedder=...)`, header = title; nDCG@10 of documents ranked by their best "
        "chunk, all test queries; hybrid-tuned out-of-sample (5 folds, seed 0, each query "
        "ranked by the spec `tune_fusion` chose on the other folds, as in the dense-hybrid "
        "section). long chunks: chunks that need more than one window; windows: windows "
        "embedded for all chunks (the embedding work, against one per chunk before). Where "
        "no chunk is over the limit, after = before by construction and nothing was re-run.",
        "",
        "| dataset | chunk size | chunks | long chunks | windows | bm25 | dense before "
        "| dense after | Δ | hybrid-tuned before | hybrid-tuned after | Δ |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        head = (
            f"| {r['dataset']} | {r['size']} | {r['chunks']:,} | {r['long_chunks']:,} "
            f"| {r['windows']:,} "
        )
        b, a = r.get("before"), r.get("after")
        if not r["long_chunks"]:
            lines.append(head + "| – | = after | = before | 0 | = after | = before | 0 |")
        elif b is None or a is None:
            lines.append(head + "| not run (time) | | | | | | |")
        else:
            lines.append(
                head + f"| {b['bm25']:.4f} | {b['dense']:.4f} | {a['dense']:.4f} "
                f"| {a['dense'] - b['dense']:+.4f} | {b['hybrid-tuned']:.4f} "
                f"| {a['hybrid-tuned']:.4f} | {a['hybrid-tuned'] - b['hybrid-tuned']:+.4f} |"
            )
    measured = [r for r in rows if r.get("before") and r.get("after")]
    if measured:
        gain = {
            m: sum(r["after"][m] - r["before"][m] for r in measured) / len(measured)
            for m in ("dense", "hybrid-tuned")
        }
        lines += [
            "",
            f"Mean Δ over the {len(measured)} cells re-run: dense {gain['dense']:+.4f}, "
            f"hybrid-tuned {gain['hybrid-tuned']:+.4f}.",
        ]
    if others:
        lines += [
            "",
            "Overlap between windows (word pieces shared by consecutive windows), same cells:",
            "",
            "| dataset | chunk size | overlap | windows | dense after | hybrid-tuned after |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        base = {(r["dataset"], r["size"]): r for r in rows if r.get("after")}
        for r in [
            *(base[(o["dataset"], o["size"])] for o in others if (o["dataset"], o["size"]) in base),
            *others,
        ]:
            a = r["after"]
            lines.append(
                f"| {r['dataset']} | {r['size']} | {r['overlap']} | {r['windows']:,} "
                f"| {a['dense']:.4f} | {a['hybrid-tuned']:.4f} |"
            )
    lines += ["", DECISION]
    lines += [
        "",
        f"Command: `{command}` (the overlap row: `--sizes 512 --datasets cranfield "
        "--overlap 32`; cells are appended to .bench-cache/embed_windows.jsonl as they "
        "finish and read back from there; here they ran in parts, 512 first).",
    ]
    return "\n".join(lines)


def write_docs(sizes: Sequence[int], datasets: Sequence[str], overlap: int) -> None:
    """Render every cell measured (counting the chunks of those not run) into DOCS."""
    from ctxselect.embed import HashEmbedder
    from ctxselect.embed.windows import WindowedEmbedder, WindowPolicy, _minilm_tokenizer

    counter = WindowedEmbedder(HashEmbedder(), WindowPolicy(256, overlap), _minilm_tokenizer)
    done = list(_done().values())
    rows, others = [], []
    for size in sizes:
        for name in datasets:
            found = [r for r in done if r["dataset"] == name and r["size"] == size]
            mine = [r for r in found if r["overlap"] == overlap]
            corpus = datasets_root() / name / "corpus.jsonl"
            rows.append(
                mine[-1]
                if mine
                else {"dataset": name, "size": size, **long_chunks(corpus, size, counter)}
            )
            others += [r for r in found if r["overlap"] != overlap and r.get("after")]
    command = ".venv/bin/python bench/embed_windows.py --write-docs"
    replace_section(DOCS, START, END, to_markdown(rows, others, command))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--overlap", type=int, default=0)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--no-run", action="store_true", help="only render what was measured")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    datasets = args.datasets.split(",")
    if not args.no_run:
        run(sizes, datasets, args.overlap)
    if args.write_docs:
        write_docs(sizes, datasets, args.overlap)


if __name__ == "__main__":
    main()

"""One large document in a small corpus: index it, re-index it after an edit, remove it.

The writes that delete a document read its old chunks first (to carry vectors over and
to keep the index's chunk digest); those reads once sliced the document in SQL per chunk,
so their cost grew with chunks x document size. Prints one JSON line per size with wall
seconds of each step; never asserts.

    .venv/bin/python bench/large_document.py [--mb 2,10]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from ctxselect import api


def one_size(mb: float) -> dict[str, float]:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    paragraphs = int(mb * 1e6 / 700)
    text = "".join(" ".join(rng.choices(words, k=120)) + "\n\n" for _ in range(paragraphs))
    with tempfile.TemporaryDirectory(prefix="ctxselect-bench-") as scratch:
        root, index = Path(scratch) / "docs", Path(scratch) / "ix"
        root.mkdir()
        (root / "big.txt").write_text(text, encoding="utf-8")
        (root / "small.txt").write_text("a small note\n", encoding="utf-8")
        out: dict[str, float] = {"mb": mb}
        started = time.perf_counter()
        written = api.index_paths([root], index, max_bytes=10**9)
        out["index_s"] = round(time.perf_counter() - started, 2)
        out["chunks"] = written.chunks
        (root / "big.txt").write_text("An edit at the top.\n\n" + text, encoding="utf-8")
        started = time.perf_counter()
        api.index_paths([root], index, max_bytes=10**9)
        out["reindex_edited_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        api.remove_documents(["big.txt"], index)
        out["remove_s"] = round(time.perf_counter() - started, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", default="2,10", help="document sizes in MB, comma-separated")
    args = parser.parse_args()
    for mb in (float(x) for x in args.mb.split(",")):
        print(json.dumps(one_size(mb)), flush=True)


if __name__ == "__main__":
    main()

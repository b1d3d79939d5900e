"""A writer for the crash test to kill: deterministic index updates from a seed, logged.

Run as ``python crash_writer.py INDEX FOLDER SEED LOG``. It logs ``ready`` once imported,
then ``begin I`` before and ``done I`` after each operation (unbuffered writes, so what
is logged survives SIGKILL). :func:`steps` replays the same operations and the corpus
after each one, so the test knows the only two states the index may hold after a kill.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ctxselect as cs
from ctxselect.ingest import content_hash, load_paths
from ctxselect.types import Document

WORDS = ["alpha", "beta", "gamma", "delta", "the", "omega", "sigma", "kappa", "lambda", "mu"]
SPECS = (
    cs.ChunkSpec(chunker="paragraph", size=60, tokenizer="chars4"),
    cs.ChunkSpec(chunker="paragraph", size=90, tokenizer="chars4"),
)


def _text(rng: random.Random) -> str:
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        for _ in range(rng.randint(1, 8))
    ]
    return "\n\n".join(paragraphs)


def folder_docs(folder: Path) -> dict[str, Document]:
    """The documents a scan of ``folder`` gives."""
    return {d.doc_id: d for d in load_paths([folder]).documents}


def make_folder(folder: Path, seed: int) -> None:
    """Write the files a ``rescan`` step indexes."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(8):
        (folder / f"file{i}.txt").write_text(_text(rng) + "\n", encoding="utf-8")


def steps(seed: int, folder: Path) -> Iterator[tuple[str, Any, dict[str, str]]]:
    """Yield (operation, argument, {doc_id: content_hash} after it), forever."""
    rng = random.Random(seed)
    corpus: dict[str, Document] = folder_docs(folder)
    flip = 0
    while True:
        kind = rng.choice(("put", "put", "put", "remove", "compact", "rescan"))
        if kind == "put":
            docs = [
                Document(f"api{rng.randint(0, 11)}", _text(rng)) for _ in range(rng.randint(1, 4))
            ]
            docs = list({d.doc_id: d for d in docs}.values())
            docs = [Document(d.doc_id, d.text, content_hash=content_hash("", d.text)) for d in docs]
            arg: Any = (docs, rng.choice((None, 0.3, 0.0)))
            corpus.update({d.doc_id: d for d in docs})
        elif kind == "remove" and corpus:
            arg = sorted(rng.sample(sorted(corpus), min(len(corpus), rng.randint(1, 3))))
            for doc_id in arg:
                del corpus[doc_id]
        elif kind == "rescan":
            flip = 1 - flip
            arg = SPECS[flip]  # other settings: a full rebuild
            corpus = folder_docs(folder)
        else:
            kind, arg = "compact", None
        yield kind, arg, {d: doc.content_hash for d, doc in corpus.items()}


def corpus_docs(seed: int, folder: Path, upto: int) -> dict[str, Document]:
    """The documents after ``upto`` steps (0: the initial folder index)."""
    rng_steps = steps(seed, folder)
    docs = folder_docs(folder)
    for _ in range(upto):
        kind, arg, _ = next(rng_steps)
        if kind == "put":
            docs.update({d.doc_id: d for d in arg[0]})
        elif kind == "remove":
            for doc_id in arg:
                docs.pop(doc_id, None)
        elif kind == "rescan":
            docs = folder_docs(folder)
    return docs


def main(index: str, folder: str, seed: int, log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"ready\n")
    for i, (kind, arg, _) in enumerate(steps(seed, Path(folder))):
        os.write(fd, f"begin {i}\n".encode())
        if kind == "put":
            cs.add_documents(arg[0], index, compact_fraction=arg[1])
        elif kind == "remove":
            cs.remove_documents(arg, index)
        elif kind == "rescan":
            cs.index_paths([folder], index, chunk=arg)
        else:
            cs.compact_index(index)
        os.write(fd, f"done {i}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])

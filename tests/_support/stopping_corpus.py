"""A small labeled corpus where stopping pays: one relevant document, many weak matches."""

from __future__ import annotations

import json
import random

TOPICS = 14
COMMON = ["context", "window", "budget", "select", "ranking", "chunk", "query", "token"]


def make_labeled(root):
    """A corpus where each query has one clearly relevant document among many weak matches."""
    rng = random.Random(7)
    corpus = root / "corpus"
    corpus.mkdir()
    for i in range(TOPICS):
        words = [f"topic{i}word"] * 6 + [f"marker{i}"] * 3 + rng.choices(COMMON, k=30)
        (corpus / f"t{i:02d}.md").write_text(" ".join(words) + "\n", encoding="utf-8")
    for j in range(40):
        words = [*rng.choices(COMMON, k=45), f"topic{rng.randrange(TOPICS)}word"]
        (corpus / f"f{j:02d}.md").write_text(" ".join(words) + "\n", encoding="utf-8")
    queries, qrels = root / "queries.jsonl", root / "qrels.tsv"
    queries.write_text(
        "".join(
            json.dumps({"_id": f"q{i}", "text": f"topic{i}word marker{i} context budget"}) + "\n"
            for i in range(TOPICS)
        ),
        encoding="utf-8",
    )
    qrels.write_text("".join(f"q{i}\tt{i:02d}.md\t1\n" for i in range(TOPICS)), encoding="utf-8")
    return {"corpus": corpus, "queries": queries, "qrels": qrels, "root": root}


def calibrated_folder(root):
    """The corpus of :func:`make_labeled` under ``root``, indexed with the hash embedder and
    calibrated in every mode; returns the index folder."""
    from ctxselect import api
    from ctxselect.api.calibrate import calibrate_index

    labeled = make_labeled(root)
    folder = labeled["root"] / "ix"
    api.index_paths([labeled["corpus"]], folder, embedder="hash")
    calibrate_index(folder, labeled["queries"], labeled["qrels"])
    return folder

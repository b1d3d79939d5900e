"""A corpus where filters matter: release notes outrank the howtos a filter looks for.

60 release notes (``releases/``) match "custom management command" strongly and 12
howtos (``howto/``) weakly, so the howtos rank 61st and below: a filter applied after the
top 10 returns none of them. The howtos carry Markdown front matter (``section``,
``status``), two code files give ``language``, and a garden note keeps every idf positive.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxselect import api

QUERY = "custom management command"


def write_corpus(root: Path) -> Path:
    """Write the corpus under ``root``; return it."""
    (root / "releases").mkdir(parents=True)
    (root / "howto").mkdir()
    (root / "src").mkdir()
    for i in range(60):
        (root / "releases" / f"r{i:02d}.md").write_text(
            f"# Release {i}\n\ncustom management command custom command fixed in {i}\n",
            encoding="utf-8",
        )
    for i in range(12):
        status = "draft" if i % 3 == 0 else "published"
        (root / "howto" / f"h{i:02d}.md").write_text(
            f"---\ntitle: Howto {i}\nsection: guide\nstatus: {status}\n---\n\n# Howto {i}\n\n"
            f"Writing a management command: subclass BaseCommand, page {i} of the guide.\n",
            encoding="utf-8",
        )
    (root / "src" / "manage.py").write_text(
        "def custom_command():\n    '''Run a management command.'''\n    return 1\n",
        encoding="utf-8",
    )
    (root / "src" / "manage.ts").write_text(
        "export function managementCommand(): number {\n  return 1; // command\n}\n",
        encoding="utf-8",
    )
    (root / "garden.txt").write_text("Roses need sun and water.\n", encoding="utf-8")
    return root


def build(tmp_path: Path) -> Path:
    """Write and index the corpus; return the index folder."""
    folder = tmp_path / "ix"
    api.index_paths([write_corpus(tmp_path / "corpus")], folder)
    return folder


def write_beir(root: Path) -> Path:
    """A BEIR corpus whose lines carry ``metadata``; return its ``corpus.jsonl``."""
    root.mkdir(parents=True)
    lines = [
        {"_id": "d1", "title": "Onions", "text": "golden onions caramelise slowly",
         "metadata": {"year": 2020, "venue": "food", "open": True, "tags": ["a", "b"]}},
        {"_id": "d2", "title": "Onions again", "text": "red onions in a salad",
         "metadata": {"year": 2021, "venue": "food", "open": False, "editor": None}},
        {"_id": "d3", "title": "Leeks", "text": "leeks and onions in soup",
         "metadata": {"year": 2020, "venue": "garden"}},
        {"_id": "d4", "title": "Garlic", "text": "garlic next to onions"},
    ]  # fmt: skip
    path = root / "corpus.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def write_labels(root: Path) -> tuple[Path, Path, Path]:
    """The BEIR corpus of :func:`write_beir` under ``root/beir``, one query whose one
    relevant document is ``d3``: ``(corpus, queries, qrels)``."""
    corpus = write_beir(root / "beir")
    queries = root / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "onions soup"}\n', encoding="utf-8")
    qrels = root / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n", encoding="utf-8")
    return corpus, queries, qrels

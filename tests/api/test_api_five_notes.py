"""The inspectable example through the API and the CLI's --json (issue: five notes).

"reset" is in notes 2 and 4, "synchronizer" in notes 2 and 5, "metastability" only in
note 2; notes 1 and 3 have none. With the plain-sum TF-IDF scorer the idfs are ln(5/2)
and ln(5), note 2 ranks first, and notes 1 and 3 score exactly 0.0.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import ctxselect as cs
from _support.five_notes import NOTES, QUERY
from ctxselect.interfaces.cli import commands, experiments  # noqa: F401
from ctxselect.interfaces.cli.main import cli, main  # noqa: F401

IDF = {"reset": math.log(5 / 2), "synchronizer": math.log(5 / 2), "metastability": math.log(5)}


@pytest.fixture
def notes_index(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    for doc_id, text in NOTES.items():
        (root / f"{doc_id}.txt").write_text(text + "\n", encoding="utf-8")
    folder = tmp_path / "ix"
    cs.index_paths([root], folder)
    return folder


def _check(hits: list[dict], explanations: dict[str, dict]) -> None:
    assert hits[0]["doc_id"] == "note2.txt"
    ranked = [h["doc_id"] for h in hits]
    assert set(ranked) == {"note2.txt", "note4.txt", "note5.txt"}
    scores = {h["doc_id"]: h["score"] for h in hits}
    assert scores["note2.txt"] > scores["note4.txt"] and scores["note2.txt"] > scores["note5.txt"]
    for term in explanations["note2.txt"]["terms"]:
        assert term["idf"] == pytest.approx(IDF[term["term"]], abs=1e-9)
    assert round(IDF["reset"], 3) == 0.916 and round(IDF["metastability"], 3) == 1.609
    assert explanations["note1.txt"]["score"] == 0.0
    assert explanations["note3.txt"]["score"] == 0.0


def test_five_notes_through_the_api(notes_index):
    with cs.open_index(notes_index) as idx:
        assert len(idx.table) == 5
        hits = [dataclass_dict(h) for h in idx.search(QUERY, k=5, mode="tfidf-sum")]
        explanations = {
            f"note{i}.txt": dataclass_dict(idx.explain(QUERY, f"note{i}.txt#0", mode="tfidf-sum"))
            for i in range(1, 6)
        }
    _check(hits, explanations)


def test_five_notes_through_the_cli_json(notes_index):
    runner = CliRunner()
    base = ["--index", str(notes_index), "--mode", "tfidf-sum", "--json"]
    hits = json.loads(runner.invoke(cli, ["search", QUERY, "-k", "5", *base]).output)
    explanations = {
        f"note{i}.txt": json.loads(
            runner.invoke(cli, ["explain", QUERY, "--chunk-id", f"note{i}.txt#0", *base]).output
        )
        for i in range(1, 6)
    }
    _check(hits, explanations)


def dataclass_dict(value: object) -> dict:
    import dataclasses

    return dataclasses.asdict(value)  # type: ignore[arg-type]

"""One ending for every keyword ``explain``: entries per distinct query term, exact sums."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.errors import NotFoundError
from ctxselect.retrieve import BM25Retriever, TfidfRetriever, TfidfSumRetriever, load_segments
from ctxselect.retrieve._sparse import explain_terms, index_corpus, raw_arrays
from ctxselect.types import Chunk, ChunkTable, Segments, TermExplanation

WORDS = ["apple", "banana", "cherry", "date", "fig", "grape", "running", "runs", "the",
         "quick", "brown", "fox"]  # fmt: skip
CLASSES = [BM25Retriever, TfidfRetriever, TfidfSumRetriever]
QUERIES = ["apple apple banana zzz", "running fox the", "quick brown unknownword fig", "zzz"]


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 12)))) for _ in range(n)]


def _chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk(f"d{i:02d}#0", f"d{i:02d}", 0, 0, len(t), t) for i, t in enumerate(texts)]


def test_explain_terms_zeroes_unknown_terms_and_adds_in_query_order() -> None:
    asked: list[tuple[str, int]] = []

    def part(term: str, tid: int) -> TermExplanation:
        asked.append((term, tid))
        return TermExplanation(term, 1.0, 2, 0.5, 0.1 * (tid + 1))

    terms = ["b", "zzz", "a", "c"]
    out = explain_terms("q", "d#0", "toy", terms, {"a": 0, "b": 1, "c": 2}, part, "a note")
    assert [t.term for t in out.terms] == terms
    assert out.terms[1] == TermExplanation("zzz", 0.0, 0, 0.0, 0.0)
    assert asked == [("b", 1), ("a", 0), ("c", 2)]
    assert out.score == ((0.1 * 2 + 0.0) + 0.1 * 1) + 0.1 * 3  # left to right, as search adds
    assert (out.query, out.chunk_id, out.mode, out.note) == ("q", "d#0", "toy", "a note")


def _check(retriever, analyzer, chunk_ids) -> None:
    for query in QUERIES:
        scores = {h.chunk_id: h.score for h in retriever.search(query, len(chunk_ids))}
        distinct = list(dict.fromkeys(analyzer.terms(query)))
        for chunk_id in chunk_ids:
            explanation = retriever.explain(query, chunk_id)
            assert explanation.score == scores.get(chunk_id, 0.0)
            assert [t.term for t in explanation.terms] == distinct
            assert explanation.mode == retriever.mode and explanation.note


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.mode)
def test_every_sparse_explain_matches_search(cls) -> None:
    table = ChunkTable.from_chunks(_chunks(_texts(30, 1)))
    retriever = cls.build(table)
    _check(retriever, cls.analysis()[1], table.chunk_ids)
    with pytest.raises(NotFoundError, match="not in this index"):
        retriever.explain("apple", "missing#0")


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.mode)
def test_segmented_explain_matches_search(cls) -> None:
    chunks = _chunks(_texts(40, 2))
    analyzer = cls.analysis()[1]
    base = cls.build(ChunkTable.from_chunks(chunks[:30])).arrays()
    delta = raw_arrays(index_corpus([c.text for c in chunks[30:]], analyzer))
    dead = [2, 5, 33]
    dead_terms: dict[str, int] = {}
    for row in dead:
        for term in set(analyzer.terms(chunks[row].text)):
            dead_terms[term] = dead_terms.get(term, 0) + 1
    segments = Segments(base, (delta,), np.array(dead, dtype=np.int64), dead_terms)
    table = ChunkTable.from_chunks(chunks)
    retriever = load_segments(cls, table, segments)
    live = [c.chunk_id for row, c in enumerate(chunks) if row not in dead]
    _check(retriever, analyzer, live)
    with pytest.raises(NotFoundError, match="not in this index"):
        retriever.explain("apple", chunks[2].chunk_id)

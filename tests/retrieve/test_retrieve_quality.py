"""Quality floors: BM25 nDCG@10 on the real SciFact and NFCorpus test queries.

One ChunkTable row per BEIR document (header = title, text = text), nDCG@10 by trec_eval
(pytrec_eval, ``ndcg_cut_10``). Floors only move up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxselect.retrieve import BM25Retriever
from ctxselect.types import Chunk, ChunkTable


def load_beir(folder: Path) -> tuple[ChunkTable, dict[str, str], dict[str, dict[str, int]]]:
    """Return (one chunk per document, test queries, qrels) of a BEIR folder."""
    chunks = []
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            chunks.append(
                Chunk(f"{d['_id']}#0", d["_id"], 0, 0, len(d["text"]), d["text"], d["title"])
            )
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[doc_id] = int(score)
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        queries = {q["_id"]: q["text"] for q in map(json.loads, f) if q["_id"] in qrels}
    return ChunkTable.from_chunks(chunks), queries, qrels


def bm25_ndcg_at_10(folder: Path) -> float:
    import pytrec_eval

    table, queries, qrels = load_beir(folder)
    hits = BM25Retriever.build(table).search_many(queries, k=10)
    run = {qid: {h.doc_id: h.score for h in hits[qid]} for qid in qrels}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    # a query with no hits is dropped by trec_eval: count it as 0
    return sum(per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels) / len(qrels)


@pytest.mark.data
def test_bm25_scifact_floor(scifact_dir: Path) -> None:
    # published BM25 nDCG@10 on SciFact: 0.665 (BEIR paper) to 0.690; bm25s 0.687
    assert bm25_ndcg_at_10(scifact_dir) >= 0.66


@pytest.mark.data
def test_bm25_nfcorpus_floor(nfcorpus_dir: Path) -> None:
    # published BM25 nDCG@10 on NFCorpus: 0.321 (bm25s) to 0.344; BEIR paper 0.325
    assert bm25_ndcg_at_10(nfcorpus_dir) >= 0.31

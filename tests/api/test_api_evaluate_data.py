"""Sweeps and budgeted evaluation on real data (SciFact): the report, reuse, trec_eval.

The sweep grid is small (one chunking, bm25, three budgets) but every test query is
asked, so the numbers are the real ones for that configuration.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from ctxselect import api
from ctxselect.api import sweep
from ctxselect.api.evaluate import evaluate_corpus
from ctxselect.config import ChunkSpec
from ctxselect.eval import SweepGrid, load_qrels, read_trec_run

GRID = SweepGrid(chunkers=("tokens",), sizes={"tokens": (512,)}, budgets=(500, 2000, 8000))


@pytest.mark.data
def test_sweep_on_scifact_writes_the_report_and_reuses_it(scifact_dir, tmp_path):
    out = tmp_path / "sweep"
    report = sweep.run_sweep(
        scifact_dir / "corpus.jsonl",
        scifact_dir / "queries.jsonl",
        qrels=scifact_dir / "qrels" / "test.tsv",
        grid=GRID,
        out=out,
    )
    assert report.dataset == "scifact" and report.documents == 5183 and report.n_queries == 300
    assert {p.name for p in out.iterdir()} == {
        "results.jsonl",
        "tables.txt",
        "report.html",
        "recall_vs_budget.png",
        "relevant_tokens_vs_budget.png",
        "recall_vs_tokens_used.png",
        "quality_vs_chunk_size.png",
    }
    page = (out / "report.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img src="data:image/png;base64,', page)) == 4
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert "scifact" in page and "5,183" in page and "300" in page
    size = report.sizes[0]
    assert size.metrics["ndcg@10"] >= 0.66  # the quality floor of BM25 on SciFact
    recalls = [p.recall for p in report.curves[0].points]
    assert recalls == sorted(recalls) and 0.5 < recalls[0] < recalls[-1] <= 1.0
    assert all(p.tokens_used <= p.budget for p in report.curves[0].points)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 5 + 3 * 5 and {r["queries"] for r in rows} == {300}
    hits = [p.hit for p in report.curves[0].points]
    assert all(0 < r <= h for r, h in zip(recalls, hits, strict=True))  # a fraction <= any
    again = sweep.run_sweep(
        scifact_dir / "corpus.jsonl",
        scifact_dir / "queries.jsonl",
        qrels=scifact_dir / "qrels" / "test.tsv",
        grid=GRID,
        out=out,
        plots=False,
    )
    assert (again.computed, again.reused) == (0, 4) and again.curves == report.curves


@pytest.mark.data
def test_chunk_level_metrics_equal_trec_eval_on_scifact(scifact_dir, tmp_path):
    """Chunks judged by their document's grade: our values equal pytrec_eval's, to 1e-6."""
    import pytrec_eval

    result = evaluate_corpus(
        scifact_dir / "corpus.jsonl",
        scifact_dir / "queries.jsonl",
        scifact_dir / "qrels" / "test.tsv",
        index=tmp_path / "ix",
        chunk=ChunkSpec(chunker="tokens", size=128),
        level="chunk",
        metrics="ndcg@10,recall@100,map@100",
        run_out=tmp_path / "run",
        per_query=True,
        budgets=(1000,),
    )
    qrels = load_qrels(scifact_dir / "qrels" / "test.tsv")
    with api.open_index(tmp_path / "ix") as idx:
        table = idx.table
        chunks_of: dict[str, list[str]] = {}
        for cid, doc in zip(table.chunk_ids, table.doc_ids, strict=True):
            chunks_of.setdefault(doc, []).append(cid)
    chunk_qrels = {
        q: {cid: g for doc, g in judged.items() if g >= 1 for cid in chunks_of.get(doc, [])}
        for q, judged in qrels.items()
    }
    assert result.chunks > result.documents  # 128-token chunks split many abstracts
    theirs = pytrec_eval.RelevanceEvaluator(
        chunk_qrels, {"ndcg_cut_10", "recall_100", "map_cut_100"}
    ).evaluate(read_trec_run(tmp_path / "run"))
    assert result.per_query is not None and result.n_queries == 300
    for qid, ours in result.per_query.items():
        ref = theirs[qid]
        assert ours["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-6)
        assert ours["recall@100"] == pytest.approx(ref["recall_100"], abs=1e-6)
        assert ours["map@100"] == pytest.approx(ref["map_cut_100"], abs=1e-6)
    mean = sum(v["ndcg_cut_10"] for v in theirs.values()) / len(theirs)
    assert result.metrics["ndcg@10"] == pytest.approx(mean, abs=1e-6)
    assert 0.3 < result.metrics["recall@1000t"] < 1.0


@pytest.mark.data
@pytest.mark.slow
def test_stop_auto_on_scifact_sends_less_and_beats_fill_at_matched_tokens(scifact_dir, tmp_path):
    """Issue 10 targets on SciFact bm25 (bench/stopping.py has all three collections):
    out-of-sample stop auto uses <= 60% of fill's mean tokens and is above the fill curve
    interpolated at its own mean tokens."""
    inputs = (scifact_dir / "corpus.jsonl", scifact_dir / "queries.jsonl")
    common = {"qrels": scifact_dir / "qrels" / "test.tsv", "index": tmp_path / "index"}
    fill = evaluate_corpus(*inputs, budgets=(250, 500, 1000, 2000), metrics="ndcg@10", **common)
    stop = evaluate_corpus(*inputs, budgets=(1000, 2000), metrics="ndcg@10", stop="auto", **common)
    assert stop.calibration == "out of sample, 5 folds"
    curve = sorted((fill.metrics[f"tokens_used@{b}t"], fill.metrics[f"recall@{b}t"])
                   for b in (250, 500, 1000, 2000))  # fmt: skip
    for budget in (1000, 2000):
        used, recall = stop.metrics[f"tokens_used@{budget}t"], stop.metrics[f"recall@{budget}t"]
        assert used <= 0.6 * fill.metrics[f"tokens_used@{budget}t"]
        (t0, r0), (t1, r1) = next(
            (a, b) for a, b in itertools.pairwise(curve) if a[0] <= used <= b[0]
        )
        assert recall >= r0 + (r1 - r0) * (used - t0) / (t1 - t0) + 0.01

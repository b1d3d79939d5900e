"""The sweep facade on a small corpus: report folder, reuse, exact selections, labels."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import shutil
import sys

import pytest

from ctxselect import api, budget
from ctxselect.api import sweep as sweeps
from ctxselect.api.evaluate import evaluate_corpus
from ctxselect.config import ChunkSpec
from ctxselect.errors import ConfigError, InputError, MissingExtraError, UnknownNameError
from ctxselect.eval import SweepGrid

TOPICS = {
    "01-budget.md": (
        "A token budget caps the context. Framing lines count against the budget too.",
        "The knee of a budget sweep is where recall stops climbing with more tokens.",
        "Every token past the knee is sent again on each later turn of the session.",
    ),
    "02-chunking.md": (
        "Chunkers cut documents into pieces with exact character offsets.",
        "Paragraph chunks keep whole paragraphs; token chunks obey a hard size limit.",
        "Small chunks are cheap to send but often too thin to match a question.",
    ),
    "03-ranking.md": (
        "BM25 scores chunks by term frequency, saturated, and inverse document frequency.",
        "TF-IDF cosine is the inspectable baseline ranker of the lab.",
        "Stemming maps ranking, ranked and ranks onto one term.",
    ),
    "04-cache.md": (
        "A prompt cache bills re-read tokens at a fraction of the fresh price.",
        "Without a cache every re-sent token costs the full price on each turn.",
        "The cache factor c is the cached price divided by the normal price.",
    ),
    "05-cooking.md": (
        "Simmer the onions slowly until they turn golden and sweet.",
        "Bread dough rises in a warm kitchen within two hours.",
        "Salt the pasta water generously before the pasta goes in.",
    ),
}
QUERIES = {
    "q1": ("how do framing lines count against the token budget", "01-budget.md", 0),
    "q2": ("paragraph chunks and token chunk size limit", "02-chunking.md", 1),
    "q3": ("bm25 term frequency saturation inverse document frequency", "03-ranking.md", 0),
    "q4": ("price of re-read tokens with a prompt cache", "04-cache.md", 0),
    "q5": ("how long does bread dough take to rise", "05-cooking.md", 1),
}


def paragraphs(name: str) -> list[str]:
    """Each topic sentence becomes a paragraph, padded with filler about the same topic."""
    first = TOPICS[name][0].split()[1]
    return [
        f"{s} " + " ".join([f"This {first} note adds detail number {i}." for i in range(6)])
        for s in TOPICS[name]
    ]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    corpus = root / "corpus"
    corpus.mkdir()
    for name in TOPICS:
        (corpus / name).write_text("\n\n".join(paragraphs(name)) + "\n", encoding="utf-8")
    queries = root / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _, _) in QUERIES.items()),
        encoding="utf-8",
    )
    qrels = root / "qrels.tsv"
    qrels.write_text(
        "".join(f"{q}\t{doc}\t1\n" for q, (_, doc, _) in QUERIES.items()), encoding="utf-8"
    )
    spans, whole = root / "spans.jsonl", root / "whole.jsonl"
    span_lines, whole_lines = [], []
    for qid, (_, doc, index) in QUERIES.items():
        text = (corpus / doc).read_text(encoding="utf-8").strip()
        start = text.index(paragraphs(doc)[index])
        end = start + len(paragraphs(doc)[index])
        span_lines.append({"qid": qid, "doc_id": doc, "start": start, "end": end, "grade": 1})
        whole_lines.append({"qid": qid, "doc_id": doc, "start": 0, "end": len(text)})
    spans.write_text("".join(json.dumps(s) + "\n" for s in span_lines), encoding="utf-8")
    whole.write_text("".join(json.dumps(s) + "\n" for s in whole_lines), encoding="utf-8")
    return {
        "root": root,
        "corpus": corpus,
        "queries": queries,
        "qrels": qrels,
        "spans": spans,
        "whole": whole,
    }


GRID = SweepGrid(
    chunkers=("tokens", "paragraph"),
    sizes={"tokens": (40, 80), "paragraph": (300,)},
    modes=("bm25", "tfidf"),
    budgets=(100, 200, 400),
)


def sweep(toy, out, grid=GRID, **options):
    return sweeps.run_sweep(
        toy["corpus"], toy["queries"], qrels=toy["qrels"], grid=grid, out=out, name="toy", **options
    )


def test_sweep_writes_a_self_contained_report_folder(toy, tmp_path):
    report = sweep(toy, tmp_path / "out")
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert names == {
        "results.jsonl",
        "tables.txt",
        "report.html",
        "recall_vs_budget.png",
        "relevant_tokens_vs_budget.png",
        "recall_vs_tokens_used.png",
        "quality_vs_chunk_size.png",
    }
    assert {f.rsplit("/", 1)[-1] for f in report.files} == names
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 4
    assert all(base64.b64decode(i).startswith(b"\x89PNG\r\n\x1a\n") for i in images)
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing external
    for png in ("recall_vs_budget.png", "quality_vs_chunk_size.png"):
        assert (tmp_path / "out" / png).read_bytes().startswith(b"\x89PNG")
    assert "toy" in page and "5 documents" in page and "tokens-40/bm25/skip" in page
    tables = (tmp_path / "out" / "tables.txt").read_text(encoding="utf-8")
    assert tables == sweeps.sweep_tables(report) and "answer in context" in tables
    # 3 chunkings x 2 modes: 6 ranking settings + 6 x 3 budgets
    assert (report.computed, report.reused) == (24, 0)
    rows = (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 6 * (3 + 2) + 18 * 5  # 5 budget metrics: recall, hit, ...
    first = json.loads(rows[0])
    assert first["dataset"] == "toy" and first["documents"] == 5 and first["queries"] == 5
    assert report.n_queries == 5 and len(report.curves) == 6 and len(report.sizes) == 6
    json.dumps(dataclasses.asdict(report))  # the --json output


def test_rerun_measures_nothing_and_an_extra_budget_only_what_is_new(toy, tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = sweep(toy, out)
    built = []
    real = sweeps.retriever_for
    monkeypatch.setattr(sweeps, "retriever_for", lambda *a, **k: built.append(a) or real(*a, **k))
    again = sweep(toy, out)
    assert (again.computed, again.reused, built) == (0, 24, [])
    assert again.curves == first.curves and again.sizes == first.sizes
    more = sweep(toy, out, grid=dataclasses.replace(GRID, budgets=(100, 200, 400, 800)))
    assert (more.computed, more.reused) == (6, 24)  # one new budget per retrieval setting
    assert len(built) == 6  # each (chunking, mode) built once more, not once per budget
    metric = sweep(toy, out, metrics=("hit@1", "ndcg@10", "recall@100", "mrr@10"))
    assert metric.computed == 6 and "mrr@10" in metric.sizes[0].metrics


def test_changed_labels_change_every_key(toy, tmp_path):
    out = tmp_path / "out"
    grid = dataclasses.replace(GRID, chunkers=("tokens",), sizes={"tokens": (80,)}, modes=("bm25",))
    sweeps.run_sweep(toy["corpus"], toy["queries"], qrels=toy["qrels"], grid=grid, out=out)
    spans = sweeps.run_sweep(
        toy["corpus"], toy["queries"], spans=toy["spans"], grid=grid, out=out, plots=False
    )
    assert spans.computed == 4 and spans.label_kind == "spans"
    assert {f.rsplit("/", 1)[-1] for f in spans.files} == {
        "results.jsonl",
        "tables.txt",
        "report.html",
    }


def test_whole_document_spans_score_like_document_labels(toy, tmp_path):
    grid = dataclasses.replace(GRID, chunkers=("tokens",), sizes={"tokens": (40,)})
    by_doc = sweep(toy, tmp_path / "a", grid=grid, plots=False)
    by_span = sweeps.run_sweep(
        toy["corpus"],
        toy["queries"],
        spans=toy["whole"],
        grid=grid,
        out=tmp_path / "b",
        name="toy",
        plots=False,
    )
    assert by_span.label_kind == "spans" and by_doc.label_kind == "documents"
    assert [c.points for c in by_span.curves] == [c.points for c in by_doc.curves]
    assert [s.metrics for s in by_span.sizes] == [s.metrics for s in by_doc.sizes]


def test_narrow_spans_judge_chunks_by_overlap(toy, tmp_path):
    grid = SweepGrid(chunkers=("tokens",), sizes={"tokens": (40,)}, budgets=(100, 400))
    doc = sweep(toy, tmp_path / "a", grid=grid, level="chunk", plots=False)
    span = sweeps.run_sweep(
        toy["corpus"],
        toy["queries"],
        spans=toy["spans"],
        grid=grid,
        out=tmp_path / "b",
        level="chunk",
        plots=False,
    )
    # a span is one paragraph of the document: fewer chunks and tokens count as relevant
    assert span.curves[0].points[-1].relevant_tokens < doc.curves[0].points[-1].relevant_tokens
    assert span.sizes[0].metrics["hit@1"] <= doc.sizes[0].metrics["hit@1"]
    assert span.curves[0].points[-1].recall > 0.5


def test_memo_counter_selects_exactly_what_the_plain_counter_selects(toy):
    chunks = [
        c
        for path in sorted(toy["corpus"].iterdir())
        for c in api.chunk_file(path, ChunkSpec(chunker="tokens", size=40))
    ]
    texts = {p.name: p.read_text(encoding="utf-8") for p in toy["corpus"].iterdir()}
    retriever = api.retriever_for(chunks, "bm25")
    for tokenizer in ("cl100k", "chars4"):
        memo = sweeps.MemoCounter(tokenizer)
        plain = sweeps.MemoCounter(tokenizer).counter
        for fmt in ("markdown", "xml", "json"):
            for qid, (text, _, _) in QUERIES.items():
                hits = retriever.search(text, 60)
                for size in (60, 150, 400, 2000):
                    opts = {"format": fmt, "span_text": lambda d, s, e: texts[d][s:e]}
                    ours = budget.make_packer("skip", memo, **opts).pack(hits, size)
                    theirs = budget.make_packer("skip", plain, **opts).pack(hits, size)
                    assert ours == theirs, (tokenizer, fmt, qid, size)


def test_eval_budgets_select_exactly_as_index_select(toy, tmp_path):
    folder = tmp_path / "ix"
    result = evaluate_corpus(
        toy["corpus"],
        toy["queries"],
        toy["qrels"],
        index=folder,
        chunk=ChunkSpec(chunker="tokens", size=40),
        budgets=(100, 400),
        metrics="ndcg@10,recall@200t",
        per_query=True,
    )
    assert result.budgets == (100, 200, 400) and result.packer == "skip"
    with api.open_index(folder) as idx:
        n_tokens = idx.table.n_tokens
        for qid, (text, doc, _) in QUERIES.items():
            for b in result.budgets:
                # eval packs to the budget: select with stop="none", minus its stop reason
                expected = dataclasses.replace(idx.select(text, b, stop="none"), stop="")
                hits = idx.search(text, sweeps.selection_depth(4000, n_tokens))
                packer = budget.make_packer(
                    "skip", sweeps.MemoCounter("cl100k"), span_text=idx.store.span_text
                )
                assert packer.pack(hits[: sweeps.selection_depth(b, n_tokens)], b) == expected
                found = any(p.doc_id == doc for p in expected.chunks)
                assert result.per_query[qid][f"hit@{b}t"] == float(found)
                # one relevant document per query: its fraction found is the hit
                assert result.per_query[qid][f"recall@{b}t"] == float(found)
                assert result.per_query[qid][f"tokens_used@{b}t"] == expected.tokens_used
    assert result.metrics["tokens_used@100t"] <= 100


def test_sweep_input_errors(toy, tmp_path):
    with pytest.raises(UnknownNameError, match="unknown chunker 'nope': choose one of"):
        sweep(toy, tmp_path, grid=SweepGrid(chunkers=("nope",)))
    with pytest.raises(ConfigError, match="recall@500t is a budget metric"):
        sweep(toy, tmp_path, metrics="ndcg@10,recall@500t")
    with pytest.raises(ConfigError, match="unknown level"):
        sweep(toy, tmp_path, level="passage")
    with pytest.raises(ConfigError, match="cache factor"):
        sweep(toy, tmp_path, cache_factor=3.0)


def test_a_results_folder_on_an_input_or_in_the_corpus_is_refused_before_any_work(toy, tmp_path):
    with pytest.raises(InputError, match=r"--out .*queries\.jsonl is the --queries file"):
        sweep(toy, toy["queries"])
    with pytest.raises(InputError, match=r"lies inside the --corpus folder .*: the next run"):
        sweep(toy, toy["corpus"] / "results")  # its report.html would become a document
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match=r"notes\.txt is a file: the sweep writes a results"):
        sweep(toy, tmp_path / "notes.txt")
    assert sorted(p.name for p in toy["corpus"].iterdir()) == sorted(TOPICS)  # nothing made
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
    hidden = toy["corpus"] / ".sweeps"  # a hidden folder is one the corpus walk skips
    assert sweep(toy, hidden, grid=SweepGrid(modes=("bm25",), budgets=(100,)), plots=False)
    shutil.rmtree(hidden)


def test_missing_matplotlib_names_the_extra(toy, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[plot\]'"):
        sweep(toy, tmp_path)
    assert not (tmp_path / "results.jsonl").exists()  # failed before measuring anything

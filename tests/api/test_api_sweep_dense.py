"""Sweeps and the lab over dense and hybrid: in-memory retrievers, cached vectors, keys."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np
import pytest

from ctxselect import api, ingest
from ctxselect import chunk as chunk_stage
from ctxselect import eval as ev
from ctxselect.api import evaluate
from ctxselect.api import sweep as sweeps
from ctxselect.config import ChunkSpec
from ctxselect.embed import FileVectorCache, HashEmbedder
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.eval import SweepGrid
from ctxselect.types import Chunk

DOCS = {
    "01-budget.md": [
        "A token budget caps the context sent to the model on every turn.",
        "Framing lines count against the budget as much as the chunk text does.",
    ],
    "02-ranking.md": [
        "BM25 ranks chunks by saturated term frequency and inverse document frequency.",
        "TF-IDF cosine is the plain baseline ranker of the lab.",
    ],
    "03-cooking.md": [
        "Simmer the onions slowly until they turn golden and sweet.",
        "Bread dough rises in a warm kitchen within two hours.",
    ],
    "04-cache.md": [
        "A prompt cache bills re-read tokens at a fraction of the fresh price.",
        "Without a cache every re-sent token costs the full price on each turn.",
    ],
}
QUERIES = {
    "q1": ("framing lines against the token budget", "01-budget.md"),
    "q2": ("term frequency ranking of chunks", "02-ranking.md"),
    "q3": ("how long does bread dough rise", "03-cooking.md"),
    "q4": ("price of re-read tokens in a prompt cache", "04-cache.md"),
}
GRID = SweepGrid(
    chunkers=("tokens",),
    sizes={"tokens": (16, 32)},
    modes=("bm25", "dense", "hybrid"),
    budgets=(100, 200),
)
# per (chunker, size, mode): one ranking setting and one per budget
SETTINGS_PER_MODE = 2 * (1 + len(GRID.budgets))


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it is asked to embed."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__(dim)
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        (self.queries if query else self.passages).extend(texts)
        return super().embed(texts, query=query)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense-sweep")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, paragraphs in DOCS.items():
        (corpus / name).write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    queries = root / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
    )
    qrels = root / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t{d}\t1\n" for q, (_, d) in QUERIES.items()))
    return corpus, queries, qrels


def sweep(files, out, embedder, grid=GRID):
    corpus, queries, qrels = files
    return sweeps.run_sweep(corpus, queries, qrels=qrels, grid=grid, out=out, plots=False,
                            embedder=embedder)  # fmt: skip


def chunks_of(corpus, size: int) -> list[Chunk]:
    """The chunks the sweep makes for (tokens, size): documents in id order."""
    make = chunk_stage.make_chunker(ChunkSpec(chunker="tokens", size=size))
    documents = sorted(ingest.load_paths([corpus]).documents, key=lambda d: d.doc_id)
    return [c for doc in documents for c in make.chunk(doc)]


def test_sweep_measures_bm25_dense_and_hybrid(files, tmp_path):
    embedder = CountingEmbedder()
    report = sweep(files, tmp_path / "out", embedder)
    assert (report.computed, report.reused) == (3 * SETTINGS_PER_MODE, 0)
    assert [(s.size, s.mode) for s in report.sizes] == [
        (size, mode) for size in (16, 32) for mode in ("bm25", "dense", "hybrid")
    ]
    rows = ev.read_results(tmp_path / "out" / ev.RESULTS_FILE)
    assert {r.mode for r in rows} == {"bm25", "dense", "hybrid"}
    tables = (tmp_path / "out" / "tables.txt").read_text(encoding="utf-8")
    assert " dense " in tables and " hybrid " in tables
    # each distinct chunk text embedded once, though dense and hybrid both embed them
    texts = [c.header + "\n" + c.text if c.header else c.text
             for size in (16, 32) for c in chunks_of(files[0], size)]  # fmt: skip
    assert sorted(embedder.passages) == sorted(set(embedder.passages))
    assert len(embedder.passages) == len(set(texts))
    assert sorted(embedder.queries) == sorted(t for t, _ in QUERIES.values())  # once each
    assert (tmp_path / "out" / sweeps.VECTORS_DIR).is_dir()


def test_hybrid_row_equals_the_in_memory_hybrid_retriever(files, tmp_path):
    corpus, _, qrels_file = files
    report = sweep(files, tmp_path / "out", HashEmbedder())
    retriever = api.retriever_for(chunks_of(corpus, 32), "hybrid", embedder=HashEmbedder())
    queries = {q: t for q, (t, _) in QUERIES.items()}
    ranked = ev.rank_documents(retriever.search_many, queries, 100)
    expected = ev.evaluate(ev.collapse_to_docs(ranked), ev.load_qrels(qrels_file), ["ndcg@10"])
    (point,) = [s for s in report.sizes if (s.size, s.mode) == (32, "hybrid")]
    assert point.metrics["ndcg@10"] == pytest.approx(expected.mean["ndcg@10"], abs=1e-12)
    assert 0.0 < point.metrics["ndcg@10"] <= 1.0


def test_rerun_reuses_every_row_and_embeds_nothing(files, tmp_path):
    out = tmp_path / "out"
    first = sweep(files, out, CountingEmbedder())
    embedder = CountingEmbedder()
    again = sweep(files, out, embedder)
    assert (again.computed, again.reused) == (0, 3 * SETTINGS_PER_MODE)
    assert again.sizes == first.sizes and again.curves == first.curves
    assert (embedder.passages, embedder.queries) == ([], [])
    # a new budget builds the retrievers again: chunk and query vectors come from out/vectors
    more = sweep(files, out, embedder, grid=dataclasses.replace(GRID, budgets=(100, 200, 400)))
    assert (more.computed, more.reused) == (3 * 2, 3 * SETTINGS_PER_MODE)
    assert (embedder.passages, embedder.queries) == ([], [])


def test_another_embedder_measures_dense_rows_again(files, tmp_path):
    out = tmp_path / "out"
    first = sweep(files, out, HashEmbedder())
    other = sweep(files, out, HashEmbedder(dim=64))
    assert (other.computed, other.reused) == (2 * SETTINGS_PER_MODE, SETTINGS_PER_MODE)
    bm25 = [s for s in first.sizes if s.mode == "bm25"]
    assert [s for s in other.sizes if s.mode == "bm25"] == bm25
    rows = ev.read_results(out / ev.RESULTS_FILE)
    keys = {(r.mode, r.key) for r in rows if r.budget is None and r.metric == "ndcg@10"}
    assert len({k for m, k in keys if m == "bm25"}) == 2  # one per size, shared by both runs
    assert len({k for m, k in keys if m == "hybrid"}) == 4  # per size and embedder
    cache = FileVectorCache(out / sweeps.VECTORS_DIR)
    assert cache.path("hash-v1-256").is_file() and cache.path("hash-v1-64").is_file()
    back = sweep(files, out, HashEmbedder())  # both embedders' rows are kept
    assert (back.computed, back.sizes) == (0, first.sizes)


def test_dense_modes_without_an_embedder_name_the_flag(files, tmp_path):
    with pytest.raises(ConfigError, match=r"add --embedder minilm .* or --embedder hash"):
        sweep(files, tmp_path / "out", None)
    assert not (tmp_path / "out").exists()
    with pytest.raises(UnknownNameError, match="unknown embedder 'nope'"):
        sweep(files, tmp_path / "out", "nope", grid=SweepGrid(modes=("bm25",)))
    grid = sweeps.sweep_grid(modes="bm25,dense")  # the grid is fine; the embedder is missing
    assert grid.modes == ("bm25", "dense")
    keyword = sweep(files, tmp_path / "kw", None, grid=dataclasses.replace(GRID, modes=("bm25",)))
    assert keyword.computed == SETTINGS_PER_MODE


def test_sweep_by_embedder_name_keys_by_model_id(files, tmp_path):
    named = sweep(files, tmp_path / "out", "hash")
    again = sweep(files, tmp_path / "out", HashEmbedder())  # same model id: same rows
    assert (named.computed, again.computed, again.sizes) == (3 * SETTINGS_PER_MODE, 0, named.sizes)


def lab_file(tmp_path):
    labels = tmp_path / "lab.jsonl"
    labels.write_text("".join(json.dumps({"query": t, "label": d}) + "\n"
                              for t, d in QUERIES.values()))  # fmt: skip
    return labels


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_lab_with_dense_modes(files, tmp_path, mode):
    embedder = CountingEmbedder()
    report = evaluate.run_lab(files[0], lab_file(tmp_path), sizes=(100, 200), budgets=(100,),
                                 mode=mode, embedder=embedder)  # fmt: skip
    assert report.mode == mode and report.embedder == "hash-v1-256"
    assert [r.chunk_chars for r in report.size_rows] == [100, 200]
    assert report.size_rows[0].top1_correct >= 1 and report.budget_rows[0].answer_in_context >= 1
    assert sorted(embedder.queries) == sorted(t for t, _ in QUERIES.values())  # once each
    assert len(embedder.passages) == len(set(embedder.passages))


def test_lab_dense_without_an_embedder(files, tmp_path):
    with pytest.raises(ConfigError, match=r"lab mode dense .* add --embedder minilm"):
        evaluate.run_lab(files[0], lab_file(tmp_path), mode="dense")
    keyword = evaluate.run_lab(files[0], lab_file(tmp_path), sizes=(100,), budgets=(100,))
    assert keyword.embedder == ""

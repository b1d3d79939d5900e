"""evaluate_corpus with an embedder; run_sweep needs one for the modes that embed."""

from __future__ import annotations

import pytest

from ctxselect import api
from ctxselect.api import evaluate, modes, sweep
from ctxselect.embed import HashEmbedder
from ctxselect.errors import ConfigError
from ctxselect.eval import SweepGrid

DOCS = {
    "budget.md": "A token budget caps the context.\n\nFraming lines count in the budget.\n",
    "rank.md": "BM25 ranks chunks by term frequency.\n\nTF-IDF is the baseline.\n",
    "cook.md": "Simmer the onions until golden.\n\nBread dough rises in two hours.\n",
}


@pytest.fixture
def files(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "framing budget"}\n'
                       '{"_id": "q2", "text": "onions golden"}\n')  # fmt: skip
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\tbudget.md\t1\nq2\tcook.md\t1\n")
    return corpus, queries, qrels


def test_evaluate_corpus_hybrid_with_an_embedder_object(files, tmp_path):
    corpus, queries, qrels = files
    folder = tmp_path / "ix"
    embedder = HashEmbedder()
    result = evaluate.evaluate_corpus(corpus, queries, qrels, mode="hybrid",
                                         index=folder, embedder=embedder)  # fmt: skip
    assert result.mode == "hybrid" and result.embedder == embedder.model_id
    assert result.n_queries == 2 and 0.0 < result.metrics["ndcg@10"] <= 1.0
    with api.open_index(folder) as idx:
        assert idx.manifest["embedder"]["model_id"] == embedder.model_id
        ranked = evaluate.ranked_documents(idx, {"q": "onions golden"}, 1, "hybrid")
    assert ranked["q"][0][0] == "cook.md"
    keyword = evaluate.evaluate_corpus(corpus, queries, qrels, mode="bm25", index=folder)
    assert keyword.embedder == embedder.model_id  # reusing the index keeps its vectors


def test_evaluate_corpus_dense_needs_an_embedder(files, tmp_path):
    corpus, queries, qrels = files
    with pytest.raises(ConfigError, match="mode dense ranks by dense vectors"):
        evaluate.evaluate_corpus(corpus, queries, qrels, mode="dense", index=tmp_path / "a")
    with pytest.raises(ConfigError, match="has none"):
        evaluate.evaluate_corpus(corpus, queries, qrels, mode="hybrid",
                                    index=tmp_path / "b", embedder="none")  # fmt: skip


def test_sweep_needs_an_embedder_for_dense_modes(files, tmp_path):
    corpus, queries, qrels = files
    assert modes.embedding_modes() == ["dense", "hybrid"]
    assert "dense" not in modes.keyword_modes() and "bm25" in modes.keyword_modes()
    with pytest.raises(ConfigError, match="sweep mode hybrid embeds the chunks and queries"):
        sweep.run_sweep(corpus, queries, qrels=qrels, grid=SweepGrid(modes=("hybrid",)),
                         out=tmp_path / "sw", plots=False)  # fmt: skip
    assert not (tmp_path / "sw").exists()
    report = sweep.run_sweep(corpus, queries, qrels=qrels, grid=SweepGrid(modes=("hybrid",)),
                              out=tmp_path / "sw", plots=False, embedder="hash")  # fmt: skip
    assert {s.mode for s in report.sizes} == {"hybrid"} and report.computed > 0

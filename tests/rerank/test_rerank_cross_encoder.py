"""The cross-encoder reranker, on a tiny BERT cross-encoder this test builds and saves.

No package ships cross-encoder weights, so the test makes its own: a randomly
initialised two-layer BERT with a one-logit head and a small word-piece vocabulary.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ctxselect.errors import MissingExtraError, ModelNotFoundError
from ctxselect.rerank import CrossEncoderReranker, make_reranker
from ctxselect.types import Hit

WORDS = [
    "reset",
    "synchronizer",
    "clock",
    "power",
    "timing",
    "hold",
    "line",
    "cycles",
    "the",
    "a",
    "of",
    "to",
    "in",
]


def _save_tiny_model(folder, zero: bool = False) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    if zero:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.fill_(0.25)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _hits() -> list[Hit]:
    texts = ["reset the synchronizer", "clock power", "hold the line", "timing of cycles"]
    return [
        Hit(i + 1, f"d{i}#0", f"d{i}", 1.0 / (i + 1), 0, len(t), 3, t) for i, t in enumerate(texts)
    ]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    _save_tiny_model(folder)
    return folder


def test_reranks_by_the_models_own_scores(model_dir) -> None:
    reranker = make_reranker("cross-encoder", model=model_dir)
    hits = _hits()
    out = reranker.rerank("reset synchronizer", hits)
    direct = reranker.model.predict([("reset synchronizer", h.text) for h in hits])
    want = sorted(range(len(hits)), key=lambda i: (-direct[i], i))
    assert [h.chunk_id for h in out] == [hits[i].chunk_id for i in want]
    assert [h.score for h in out] == pytest.approx([float(direct[i]) for i in want], abs=1e-5)
    assert [h.rank for h in out] == [1, 2, 3, 4]
    assert len(reranker.rerank("reset", hits, k=2)) == 2
    again = CrossEncoderReranker(model_dir).rerank("reset synchronizer", hits)
    assert [h.chunk_id for h in again] == [h.chunk_id for h in out]  # deterministic


def test_equal_scores_keep_the_retrievers_order(tmp_path) -> None:
    _save_tiny_model(tmp_path, zero=True)
    out = CrossEncoderReranker(tmp_path).rerank("clock", _hits())
    assert [h.chunk_id for h in out] == [h.chunk_id for h in _hits()]
    assert np.allclose([h.score for h in out], out[0].score)


def test_missing_model_folder_says_none_ships(tmp_path) -> None:
    with pytest.raises(ModelNotFoundError, match="no package ships cross-encoder weights"):
        CrossEncoderReranker(tmp_path / "nowhere")


def test_missing_extra_gives_the_install_line(monkeypatch, tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[rerank\]'"):
        CrossEncoderReranker(tmp_path)


def test_search_and_select_rerank_with_a_model_on_disk(model_dir, tmp_path) -> None:
    import json

    from click.testing import CliRunner

    import ctxselect as cs
    from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
    from ctxselect.interfaces.cli.main import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(
        ["reset the synchronizer", "clock power line", "hold the line", "timing of reset cycles"]
    ):
        (docs / f"n{i}.txt").write_text(f"{text} in the clock\n", encoding="utf-8")
    ix = tmp_path / "ix"
    cs.index_paths([docs], ix)
    query = "reset the clock"
    with cs.open_index(ix) as idx:
        hits = idx.search(query, 4)
        want = CrossEncoderReranker(model_dir).rerank(query, hits)
        assert [h.chunk_id for h in idx.rank(query, 4, rerank_model=model_dir)] == [
            h.chunk_id for h in want
        ]
        selection = idx.select_ranked(idx.rank(query, 4, rerank_model=model_dir), 60)
        assert selection.tokens_used <= 60 and selection.chunks
    args = ["search", query, "-k", "4", "--rerank-model", str(model_dir), "--index", str(ix)]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert [h["chunk_id"] for h in json.loads(result.stdout)] == [h.chunk_id for h in want]

"""Windows: a passage over the model's limit is embedded whole, in windows that fit, pooled."""

from __future__ import annotations

import functools
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxselect.embed import HashEmbedder, make_embedder
from ctxselect.embed.windows import (
    LIMITS,
    TokenLimit,
    TokenWindows,
    WindowedEmbedder,
    WindowPolicy,
    _minilm_tokenizer,
    describe_long_policy,
    with_long_policy,
)
from ctxselect.errors import ConfigError

LIMIT = 32
WORDS = ["cell", "membrane", "transcriptional", "zebrafish", "η-subunit", "p53-dependent",
         "(IL-6)", "2.5%", "naïve", "Schrödinger", "of", "the", "a", "\n\n", "  ", "–"]  # fmt: skip


@functools.cache
def tokenizer() -> object:
    """MiniLM's own tokenizer.json (fast to load; no model, no torch)."""
    return _minilm_tokenizer()


def splitter(limit: int = LIMIT, overlap: int = 0) -> TokenWindows:
    return TokenWindows(tokenizer(), WindowPolicy(limit, overlap))


def windowed_hash(limit: int = LIMIT, overlap: int = 0) -> WindowedEmbedder:
    return WindowedEmbedder(HashEmbedder(64), WindowPolicy(limit, overlap), tokenizer)


def long_text(n: int = 200) -> str:
    return " ".join(WORDS[i * 7 % len(WORDS)] for i in range(n))


def check_windows(w: TokenWindows, text: str, spans: list[tuple[int, int]]) -> None:
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_, end), (start, _) in pairwise(spans):
        assert start <= end  # contiguous (or overlapping): no character is left out
    assert all(a < b for a, b in spans)
    assert max(w.count([text[a:b] for a, b in spans])) <= w.policy.limit


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=300),
    st.sampled_from([16, 32, 64]),
    st.sampled_from([0, 2, 4]),
)
def test_windows_cover_the_text_and_each_fits_the_limit(words, limit, overlap) -> None:
    text = " ".join(words).strip() or "cell"
    w = splitter(limit, overlap)
    spans = w.spans([text])[0]
    check_windows(w, text, spans)
    if w.count([text])[0] <= limit:
        assert spans == [(0, len(text))]
    else:
        assert len(spans) > 1


def test_windows_of_a_long_text_end_at_word_ends() -> None:
    text = long_text()
    w = splitter()
    spans = w.spans([text])[0]
    check_windows(w, text, spans)
    assert len(spans) > 3
    for _, end in spans[:-1]:
        assert not text[end].isalnum() or not text[end - 1].isalnum()


def test_overlapping_windows_share_text() -> None:
    text = long_text()
    spans = splitter(LIMIT, 4).spans([text])[0]
    assert any(start < end for (_, end), (start, _) in pairwise(spans))


def test_a_passage_within_the_limit_embeds_exactly_as_before() -> None:
    short = ["cell membrane of the zebrafish", "naïve (IL-6) p53-dependent"]
    model = windowed_hash()
    assert np.array_equal(model.embed(short), HashEmbedder(64).embed(short))


def test_a_long_passage_is_the_weighted_mean_of_its_windows() -> None:
    text = long_text()
    model = windowed_hash()
    spans = model.windows.spans([text])[0]
    pieces = [text[a:b] for a, b in spans]
    parts = HashEmbedder(64).embed(pieces)
    weights = np.array(model.windows.count(pieces), dtype=np.float32)
    expected = (weights[:, None] * parts).sum(axis=0)
    expected /= np.linalg.norm(expected)
    out = model.embed([text, "cell"])
    assert np.allclose(out[0], expected, atol=1e-6)
    assert np.isclose(np.linalg.norm(out[0]), 1.0, atol=1e-6)
    # the truncating model sees only the start; the windowed one sees the end too
    tail = HashEmbedder(64).embed([text[spans[-1][0] :]])[0]
    assert float(out[0] @ tail) > float(HashEmbedder(64).embed([pieces[0]])[0] @ tail)


def test_queries_are_not_windowed_and_never_load_the_tokenizer() -> None:
    def refuse() -> object:
        raise AssertionError("the tokenizer must not load for queries")

    model = WindowedEmbedder(HashEmbedder(64), WindowPolicy(LIMIT), refuse)
    text = long_text()
    assert np.array_equal(model.embed([text], query=True), HashEmbedder(64).embed([text]))


def test_the_model_id_names_the_window_policy() -> None:
    inner = HashEmbedder(64)
    assert windowed_hash().model_id == f"{inner.model_id} [windows {LIMIT} mean]"
    assert windowed_hash(LIMIT, 4).model_id == f"{inner.model_id} [windows {LIMIT}/4 mean]"
    assert windowed_hash().name == inner.name and windowed_hash().dim == inner.dim


class FakeMiniLM(HashEmbedder):
    name = "minilm"


def test_an_embedder_with_a_known_limit_gets_windows_when_asked() -> None:
    made = with_long_policy(FakeMiniLM(64), "windows")
    assert isinstance(made, WindowedEmbedder) and made.policy == WindowPolicy(256)
    assert made.model_id.endswith(" [windows 256 mean]")
    assert with_long_policy(FakeMiniLM(64)).model_id == FakeMiniLM(64).model_id  # default
    assert with_long_policy(FakeMiniLM(64), "truncate").model_id == FakeMiniLM(64).model_id
    assert describe_long_policy("minilm", made.model_id) == (
        "windows of 256 word pieces, mean-pooled"
    )
    assert describe_long_policy("minilm", FakeMiniLM(64).model_id) == "truncated at 256 word pieces"


def test_a_recorded_model_id_picks_the_policy_it_was_built_with() -> None:
    old = FakeMiniLM(64).model_id
    assert with_long_policy(FakeMiniLM(64), model_id=old).model_id == old
    made = with_long_policy(FakeMiniLM(64), model_id=f"{old} [windows 256/8 mean]")
    assert made.model_id == f"{old} [windows 256/8 mean]"


def test_embedders_without_a_limit_are_unchanged() -> None:
    assert type(make_embedder("hash")) is HashEmbedder
    assert make_embedder("hash").model_id == "hash-v1-256"
    assert describe_long_policy("hash", "hash-v1-256") == "whole (the model has no length limit)"


def test_an_unknown_policy_says_which_exist() -> None:
    with pytest.raises(ConfigError, match="windows, truncate"):
        make_embedder("hash", embed_long="chop")
    with pytest.raises(ConfigError, match="overlap"):
        WindowPolicy(32, 20)


def test_make_embedder_windows_a_registered_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LIMITS, "hash", lambda: TokenLimit(LIMIT, tokenizer))
    made = make_embedder("hash", dim=64, embed_long="windows")
    assert isinstance(made, WindowedEmbedder)
    assert made.model_id == f"hash-v1-64 [windows {LIMIT} mean]"
    assert type(make_embedder("hash", dim=64)) is HashEmbedder


@pytest.mark.slow
def test_real_minilm_embeds_a_long_chunk_whole_and_a_short_one_as_before() -> None:
    truncating = make_embedder("minilm")
    windowed = with_long_policy(truncating, "windows")
    assert isinstance(windowed, WindowedEmbedder)
    assert windowed.model_id == truncating.model_id + " [windows 256 mean]"
    short = "Zebrafish heart cells regenerate after injury."
    head = " ".join(["Cell membranes are made of a lipid bilayer with proteins."] * 30)
    tail = "Finally, the lighthouse keeper fed the cats every evening."
    text = f"{head} {tail}"
    assert len(windowed.windows.spans([text])[0]) > 1
    both, alone = windowed.embed([short, text]), truncating.embed([short, text])
    assert np.allclose(both[0], alone[0], atol=1e-6)
    cut = truncating.embed([tail], query=True)[0]
    assert float(both[1] @ cut) > float(alone[1] @ cut) + 0.05

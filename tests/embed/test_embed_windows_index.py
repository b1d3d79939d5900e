"""Windows in an index: the recorded model id names them; every index embeds as it was built.

The hash embedder is given a limit here (as if it read only 32 word pieces, counted by
MiniLM's tokenizer), so the index's whole path runs with windows and no model.
An index's default, ``auto``, cuts these prose files at the limit (``truncate``);
``tests/embed/test_embed_auto_long.py`` covers what it does with code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxselect import ChunkSpec
from ctxselect.api.read import open_index
from ctxselect.api.write import index_paths
from ctxselect.embed import HashEmbedder, make_embedder
from ctxselect.embed.windows import LIMITS, TokenLimit, _minilm_tokenizer
from ctxselect.errors import ConfigError

LIMIT = 32
TAIL = "the zebrafish lighthouse keeper"


@pytest.fixture
def limited_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LIMITS, "hash", lambda: TokenLimit(LIMIT, _minilm_tokenizer))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    filler = " ".join(f"plain filler sentence number {i} about nothing." for i in range(12))
    (folder / "long.md").write_text(f"{filler} At the very end: {TAIL}.\n", encoding="utf-8")
    (folder / "short.md").write_text("A short note on cell membranes.\n", encoding="utf-8")
    return folder


def build(docs: Path, index: Path, embedder: object) -> None:
    chunk = ChunkSpec(chunker="tokens", size=400)  # one chunk per file, over the limit
    index_paths([docs], index, chunk=chunk, embedder=embedder)  # type: ignore[arg-type]


def test_the_index_records_the_window_policy(limited_hash, docs, tmp_path) -> None:
    build(docs, tmp_path / "new", make_embedder("hash", embed_long="windows"))
    build(docs, tmp_path / "old", "hash")  # the default, auto: truncate for prose
    with open_index(tmp_path / "new") as new, open_index(tmp_path / "old") as old:
        new_id = new.info().settings["embedder"]["model_id"]
        old_id = old.info().settings["embedder"]["model_id"]
        assert new_id == f"hash-v1-256 [windows {LIMIT} mean]" and old_id == "hash-v1-256"
        assert new.info().settings["embed_long"] == f"windows of {LIMIT} word pieces, mean-pooled"
        assert old.info().settings["embed_long"] == (
            f"truncated at {LIMIT} word pieces (auto: 0 of 2 chunks are code)"
        )


@pytest.mark.parametrize("embed_long", ["truncate", "windows"])
def test_an_index_keeps_searching_and_updating_as_it_was_built(
    limited_hash, docs, tmp_path, embed_long
) -> None:
    index = tmp_path / "idx"
    build(docs, index, make_embedder("hash", embed_long=embed_long))
    recorded = make_embedder("hash", embed_long=embed_long).model_id
    for embedder in (None, "hash"):  # made by name: matched to the recorded model id
        with open_index(index, embedder=embedder) as idx:
            hits = idx.search(TAIL, 2, "dense")
            assert hits and idx.embedder().model_id == recorded
    (docs / "more.md").write_text("Another note on the lighthouse.\n", encoding="utf-8")
    index_paths([docs], index)  # an update embeds new chunks the way the index was built
    with open_index(index) as idx:
        assert idx.info().settings["embedder"]["model_id"] == recorded
        assert {h.doc_id for h in idx.search("lighthouse", 3, "dense")} >= {"more.md"}


def model_id(index: Path) -> str:
    with open_index(index) as idx:
        return str(idx.info().settings["embedder"]["model_id"])


def test_embed_long_picks_or_switches_the_policy(limited_hash, docs, tmp_path) -> None:
    index = tmp_path / "idx"
    index_paths([docs], index, embedder="hash", embed_long="windows")
    assert model_id(index) == f"hash-v1-256 [windows {LIMIT} mean]"
    index_paths([docs], index, embed_long="truncate")  # the index's own embedder, remade
    assert model_id(index) == "hash-v1-256"
    with pytest.raises(ConfigError, match="named by string"):
        index_paths([docs], tmp_path / "obj", embedder=HashEmbedder(), embed_long="truncate")
    with pytest.raises(ConfigError, match="windows, truncate"):
        index_paths([docs], tmp_path / "bad", embedder="hash", embed_long="chop")


def test_cli_index_takes_embed_long(limited_hash, docs, tmp_path) -> None:
    from click.testing import CliRunner

    from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
    from ctxselect.interfaces.cli.main import cli

    index = tmp_path / "idx"
    args = ["index", str(docs), "--index", str(index), "--embedder", "hash"]
    result = CliRunner().invoke(cli, [*args, "--embed-long", "windows"])
    assert result.exit_code == 0, result.output
    assert model_id(index) == f"hash-v1-256 [windows {LIMIT} mean]"
    info = CliRunner().invoke(cli, ["info", "--index", str(index)])
    assert f"embed_long = windows of {LIMIT} word pieces, mean-pooled" in info.output
    assert CliRunner().invoke(cli, [*args, "--embed-long", "truncate"]).exit_code == 0
    info = CliRunner().invoke(cli, ["info", "--index", str(index)])
    assert f"embed_long = truncated at {LIMIT} word pieces" in info.output
    result = CliRunner().invoke(cli, [*args, "--embed-long", "whole"])
    assert result.exit_code == 2 and "windows" in result.output

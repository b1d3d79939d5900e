"""``embed_long="auto"``, an index's default: windows when most chunks are code, else
truncate, chosen once from the chunks of the write that first embeds the index.

As in ``test_embed_windows_index.py``, the hash embedder is given a limit (32 word pieces,
counted by MiniLM's tokenizer), so the whole path runs with windows and no model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxselect import ChunkSpec
from ctxselect.api.read import open_index
from ctxselect.api.write import add_documents, index_paths
from ctxselect.embed import make_embedder
from ctxselect.embed.windows import LIMITS, TokenLimit, _minilm_tokenizer, auto_policy
from ctxselect.errors import ConfigError
from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli
from ctxselect.types import Document

LIMIT = 32
WINDOWED = f"hash-v1-256 [windows {LIMIT} mean]"
TRUNCATED = "hash-v1-256"
CHUNK = ChunkSpec(chunker="tokens", size=400)  # one chunk per file, most over the limit
WINDOWS_SAID = f"windows of {LIMIT} word pieces, mean-pooled"


@pytest.fixture
def limited_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LIMITS, "hash", lambda: TokenLimit(LIMIT, _minilm_tokenizer))


def prose(folder: Path, n: int, start: int = 0) -> Path:
    folder.mkdir(exist_ok=True)
    for i in range(start, start + n):
        words = " ".join(f"plain sentence {j} of note {i} about the lighthouse." for j in range(8))
        (folder / f"note{i}.md").write_text(words + "\n", encoding="utf-8")
    return folder


def code(folder: Path, n: int) -> Path:
    folder.mkdir(exist_ok=True)
    for i in range(n):
        body = "\n".join(f"def handler_{i}_{j}(value):\n    return value + {j}\n" for j in range(8))
        (folder / f"module{i}.py").write_text(body, encoding="utf-8")
    return folder


def settings(index: Path) -> dict[str, object]:
    with open_index(index) as idx:
        return idx.info().settings


def model_id(index: Path) -> str:
    embedder = settings(index)["embedder"]
    assert isinstance(embedder, dict)
    return str(embedder["model_id"])


def test_auto_chooses_windows_only_when_code_chunks_are_the_majority() -> None:
    assert auto_policy("minilm", 3, 4).policy == "windows"
    assert auto_policy("minilm", 2, 4).policy == "truncate"  # half is not a majority
    assert auto_policy("minilm", 0, 0).policy == "truncate"
    assert auto_policy("minilm", 412, 530).reason() == "auto: 412 of 530 chunks are code"


def test_a_prose_index_truncates_with_the_model_id_of_an_explicit_truncate(
    limited_hash, tmp_path
) -> None:
    docs = prose(tmp_path / "docs", 3)
    index_paths([docs], tmp_path / "auto", chunk=CHUNK, embedder="hash")
    index_paths([docs], tmp_path / "cut", chunk=CHUNK, embedder="hash", embed_long="truncate")
    assert model_id(tmp_path / "auto") == model_id(tmp_path / "cut") == TRUNCATED
    assert settings(tmp_path / "auto")["embed_long"] == (
        f"truncated at {LIMIT} word pieces (auto: 0 of 3 chunks are code)"
    )
    assert settings(tmp_path / "cut")["embed_long"] == f"truncated at {LIMIT} word pieces"
    with open_index(tmp_path / "auto") as auto, open_index(tmp_path / "cut") as cut:
        found = [(h.chunk_id, h.score) for h in auto.search("note 1 lighthouse", 3, "dense")]
        assert found == [(h.chunk_id, h.score) for h in cut.search("note 1 lighthouse", 3, "dense")]
    # naming truncate now changes nothing: same vectors, nothing is written
    report = index_paths([docs], tmp_path / "auto", embedder="hash", embed_long="truncate")
    assert not report.rebuilt and model_id(tmp_path / "auto") == TRUNCATED


def test_a_code_index_gets_windows_and_keeps_them_when_prose_comes(limited_hash, tmp_path) -> None:
    docs = code(tmp_path / "docs", 3)
    prose(docs, 1)
    index = tmp_path / "idx"
    index_paths([docs], index, chunk=CHUNK, embedder="hash", embed_long="auto")
    assert model_id(index) == WINDOWED
    reason = f"{WINDOWS_SAID} (auto: 3 of 4 chunks are code)"
    assert settings(index)["embed_long"] == reason
    prose(docs, 6, start=1)  # now mostly prose: auto never chooses again
    for embedder in (None, "hash"):  # the index's own, or named again
        report = index_paths([docs], index, embedder=embedder)
        assert model_id(index) == WINDOWED and settings(index)["embed_long"] == reason
    assert report.documents == 10
    with open_index(index) as idx:
        assert {h.doc_id for h in idx.search("note 5 lighthouse", 10, "dense")} >= {"note5.md"}


def test_an_explicit_policy_wins_and_drops_the_reason(limited_hash, tmp_path) -> None:
    docs = code(tmp_path / "docs", 2)
    index_paths([docs], tmp_path / "cut", chunk=CHUNK, embedder="hash", embed_long="truncate")
    assert model_id(tmp_path / "cut") == TRUNCATED
    notes = prose(tmp_path / "notes", 2)
    index_paths([notes], tmp_path / "win", chunk=CHUNK, embedder="hash", embed_long="windows")
    assert settings(tmp_path / "win")["embed_long"] == WINDOWS_SAID
    index = tmp_path / "idx"
    index_paths([docs], index, chunk=CHUNK, embedder="hash")
    assert model_id(index) == WINDOWED
    index_paths([docs], index, embed_long="truncate")  # the index's own embedder, switched
    assert model_id(index) == TRUNCATED
    assert settings(index)["embed_long"] == f"truncated at {LIMIT} word pieces"
    index_paths([docs], index)  # auto keeps what the index records now
    assert model_id(index) == TRUNCATED


def test_add_documents_to_a_new_index_chooses_too(limited_hash, tmp_path) -> None:
    docs = [Document(f"m{i}.py", "def f(x):\n    return x\n" * 20, kind="code") for i in range(2)]
    add_documents(docs, tmp_path / "idx", chunk=CHUNK, embedder="hash")
    assert model_id(tmp_path / "idx") == WINDOWED


def test_an_embedder_without_a_limit_embeds_as_it_always_did(tmp_path) -> None:
    docs = code(tmp_path / "docs", 2)
    index_paths([docs], tmp_path / "idx", chunk=CHUNK, embedder="hash")
    assert model_id(tmp_path / "idx") == TRUNCATED
    assert settings(tmp_path / "idx")["embed_long"] == "whole (the model has no length limit)"


def test_bad_values_are_refused_with_the_choices(limited_hash, tmp_path) -> None:
    docs = prose(tmp_path / "docs", 1)
    with pytest.raises(ConfigError, match="one of auto, windows, truncate, got 'chop'"):
        index_paths([docs], tmp_path / "idx", embedder="hash", embed_long="chop")
    assert make_embedder("hash").model_id == TRUNCATED  # made on its own: truncate
    with pytest.raises(ConfigError, match="decided by an index"):
        make_embedder("hash", embed_long="auto")


def test_cli_index_takes_auto_and_info_says_why(limited_hash, tmp_path) -> None:
    docs = code(tmp_path / "docs", 3)
    index = tmp_path / "idx"
    args = ["index", str(docs), "--index", str(index), "--embedder", "hash"]
    result = CliRunner().invoke(cli, [*args, "--chunker", "tokens", "--embed-long", "auto"])
    assert result.exit_code == 0, result.output
    info = CliRunner().invoke(cli, ["info", "--index", str(index)])
    assert f"embed_long = {WINDOWS_SAID} (auto: 3 of 3 chunks are code)" in info.output
    assert "setting.embed_long = windows (index manifest)" in info.output
    bad = CliRunner().invoke(cli, [*args, "--embed-long", "whole"])
    assert bad.exit_code == 2 and "'auto', 'windows', 'truncate'" in bad.output


def test_a_config_file_saying_auto_keeps_the_index_policy(limited_hash, tmp_path) -> None:
    docs, index = code(tmp_path / "docs", 2), tmp_path / "idx"
    index_paths([docs], index, chunk=CHUNK, embedder="hash", embed_long="windows")
    config = tmp_path / "ctxselect.toml"
    config.write_text(f'index = "{index}"\nembedder = "hash"\nembed_long = "auto"\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "index", str(docs)])
    assert result.exit_code == 0, result.output
    assert model_id(index) == WINDOWED  # named again, with auto: as the index records
    info = CliRunner().invoke(cli, ["--config", str(config), "info", "--json"])
    sources = {row["setting"]: row for row in json.loads(info.output)["sources"]}
    assert sources["embed_long"]["value"] == "auto"
    assert (
        sources["embed_long"]["source"]
        == f"config {config}; the index has windows, which auto keeps"
    )


def test_an_index_whose_first_writes_had_no_chunks_lets_the_first_chunks_choose(
    limited_hash, tmp_path
) -> None:
    empty = tmp_path / "docs"
    empty.mkdir()
    index = tmp_path / "idx"
    index_paths([empty], index, chunk=CHUNK, embedder="hash")
    undecided = f"truncated at {LIMIT} word pieces (auto: 0 of 0 chunks are code)"
    assert settings(index)["embed_long"] == undecided
    index_paths([empty], index, embedder="hash")  # still nothing: still undecided
    assert settings(index)["embed_long"] == undecided
    code(empty, 3)
    index_paths([empty], index)  # the first chunks are code: windows
    assert model_id(index) == WINDOWED
    assert settings(index)["embed_long"] == f"{WINDOWS_SAID} (auto: 3 of 3 chunks are code)"
    with open_index(index) as idx:
        assert idx.search("handler_1_3 value", 1, "dense")[0].doc_id == "module1.py"
    added = tmp_path / "added"  # the same through add_documents on an empty index
    add_documents([], added, chunk=CHUNK, embedder="hash")
    docs = [Document(f"m{i}.py", "def f(x):\n    return x\n" * 20, kind="code") for i in range(2)]
    add_documents(docs, added)
    assert model_id(added) == WINDOWED

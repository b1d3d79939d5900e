"""`ctxselect index` with some chunking or BM25 flags keeps the index's other settings.

docs/formats.md ("Project config") gives each index-time setting's default as "the
index's, else ...": a flag (or a config key) that changes one setting must not reset the
others to the built-in defaults.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from ctxselect.interfaces.cli import commands, store  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    unset: dict[str, str | None] = {"CTXSELECT_INDEX": None, "CTXSELECT_CONFIG": None}
    return CliRunner().invoke(cli, ["--no-config", *args], env={**unset, **(env or {})})


def settings(ix: str) -> dict:
    result = invoke("info", "--index", ix, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["settings"]


def corpus(tmp_path: Path) -> str:
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(3):
        text = f"# Page {i}\n\n" + " ".join(f"wordOne word_{i} topic{j}" for j in range(80))
        (root / f"p{i}.md").write_text(text, encoding="utf-8")
    return str(root)


def test_a_size_flag_keeps_the_index_s_chunker_tokenizer_and_overlap(tmp_path):
    ix = str(tmp_path / "ix")
    first = invoke(
        "index", corpus(tmp_path), "--index", ix, "--chunker", "tokens", "--size", "100",
        "--overlap", "10", "--tokenizer", "chars4",
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    again = invoke("index", "--index", ix, "--size", "80")
    assert again.exit_code == 0, again.output
    assert settings(ix)["chunk"] == {
        "chunker": "tokens",
        "size": 80,
        "overlap": 10,
        "tokenizer": "chars4",
    }


def test_a_b_flag_keeps_the_index_s_k1_and_identifiers(tmp_path):
    ix = str(tmp_path / "ix")
    first = invoke("index", corpus(tmp_path), "--index", ix, "--k1", "2", "--identifiers")
    assert first.exit_code == 0, first.output
    assert invoke("index", "--index", ix, "--b", "0.5").exit_code == 0
    bm25 = settings(ix)["bm25"]
    assert (bm25["k1"], bm25["b"], bm25["identifiers"]) == (2.0, 0.5, True)


def test_a_config_size_keeps_the_index_s_chunker(tmp_path):
    docs = corpus(tmp_path)
    ix = str(tmp_path / "ix")
    built = invoke("index", docs, "--index", ix, "--chunker", "paragraph", "--size", "900")
    assert built.exit_code == 0, built.output
    config = tmp_path / "ctxselect.toml"
    config.write_text(f'index = "{ix}"\nsize = 300\n', encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--config", str(config), "index"], env={"CTXSELECT_INDEX": None}
    )
    assert result.exit_code == 0, result.output
    chunk = settings(ix)["chunk"]
    assert (chunk["chunker"], chunk["size"]) == ("paragraph", 300)


def test_a_size_below_the_index_s_overlap_says_whose_overlap_and_writes_nothing(tmp_path):
    ix = str(tmp_path / "ix")
    first = invoke("index", corpus(tmp_path), "--index", ix, "--size", "100", "--overlap", "50")
    assert first.exit_code == 0, first.output
    result = invoke("index", "--index", ix, "--size", "40")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: chunk overlap 50 (the index's overlap) must be smaller than the chunk size "
        "40 (--size): pass a smaller --overlap or a larger --size\n"
    )
    assert settings(ix)["chunk"]["size"] == 100


def test_a_new_index_takes_the_defaults_for_flags_not_given(tmp_path):
    ix = str(tmp_path / "ix")
    result = invoke("index", corpus(tmp_path), "--index", ix, "--size", "64")
    assert result.exit_code == 0, result.output
    chunk = settings(ix)["chunk"]
    assert (chunk["chunker"], chunk["overlap"], chunk["tokenizer"]) == ("auto", 0, "cl100k")
    bad = invoke(
        "index", str(tmp_path / "docs"), "--index", str(tmp_path / "new"), "--overlap", "600"
    )
    assert bad.exit_code == 1 and "the default size" in bad.stderr
    assert not (tmp_path / "new").exists()

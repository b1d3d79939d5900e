"""The project config loader: discovery as ruff does it, checked values, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxselect.api.project import (
    SETTINGS,
    ProjectConfig,
    find_project_config,
    load_project_config,
)
from ctxselect.config import DEFAULT_CHUNK_SIZE
from ctxselect.errors import ConfigError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root (it holds .git) with a nested folder a/b/c."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "a" / "b" / "c").mkdir(parents=True)
    return root


def test_the_nearest_file_is_found_walking_up(repo: Path) -> None:
    (repo / "ctxselect.toml").write_text('mode = "tfidf"\n')
    (repo / "a" / "ctxselect.toml").write_text("k = 3\n")
    found = find_project_config(repo / "a" / "b" / "c")
    assert found == repo / "a" / "ctxselect.toml"
    config = load_project_config(repo / "a" / "b" / "c")
    # the nearest file only: the root's mode is not merged in (as ruff)
    assert config.path == str(repo / "a" / "ctxselect.toml") and dict(config.settings) == {"k": 3}


def test_a_pyproject_without_the_table_is_passed_over(repo: Path) -> None:
    (repo / "ctxselect.toml").write_text("budget = 3000\n")
    (repo / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nx = 1\n')
    (repo / "a" / "b" / "pyproject.toml").write_text("[tool.ctxselect]\nbudget = 500\n")
    assert find_project_config(repo / "a" / "b" / "c") == repo / "a" / "b" / "pyproject.toml"
    assert load_project_config(repo / "a" / "b").get("budget") == 500
    assert find_project_config(repo / "a") == repo / "ctxselect.toml"


def test_ctxselect_toml_wins_over_pyproject_in_one_folder(repo: Path) -> None:
    (repo / "pyproject.toml").write_text("[tool.ctxselect]\nk = 2\n")
    (repo / "ctxselect.toml").write_text("k = 5\n")
    assert load_project_config(repo / "a").get("k") == 5


def test_the_walk_stops_at_the_repository_root(tmp_path: Path, repo: Path) -> None:
    (tmp_path / "ctxselect.toml").write_text("k = 7\n")  # above the repository
    assert find_project_config(repo / "a" / "b") is None
    assert load_project_config(repo / "a" / "b") == ProjectConfig()
    (repo / "a" / ".git").write_text("gitdir: elsewhere\n")  # a submodule's .git is a file
    (repo / "ctxselect.toml").write_text("k = 4\n")
    assert find_project_config(repo / "a" / "b") is None
    assert find_project_config(repo) == repo / "ctxselect.toml"


def test_index_is_relative_to_the_file(repo: Path) -> None:
    (repo / "ctxselect.toml").write_text('index = "build/ix"\nsize = 256\noverlap = 32\n')
    config = load_project_config(repo / "a" / "b")
    assert config.get("index") == str(repo / "build" / "ix")
    assert config.get("size") == 256 and config.get("overlap") == 32
    absolute = repo / "elsewhere"
    (repo / "ctxselect.toml").write_text(f'index = "{absolute}"\n')
    assert load_project_config(repo / "ctxselect.toml").get("index") == str(absolute)
    (repo / "ctxselect.toml").write_text('index = "milvus://db:19530/docs"\n')
    assert load_project_config(repo).get("index") == "milvus://db:19530/docs"  # a store URI


def test_the_api_offers_the_loader(repo: Path) -> None:
    from ctxselect import api

    (repo / "ctxselect.toml").write_text("budget = 900\n")
    assert api.load_project_config(repo).get("budget") == 900


def test_every_key_is_read(repo: Path) -> None:
    text = """
index = "ix"
chunker = "markdown"
size = 300
overlap = 20
tokenizer = "cl100k"
k1 = 1.2
b = 0.5
embedder = "hash"
ann_threshold = 1000
embed_long = "windows"
max_bytes = 1000000
mode = "tfidf"
k = 20
budget = 4000
packer = "greedy"
format = "xml"
stop = 0.4
mmr = 0.6
promote = true
"""
    (repo / "ctxselect.toml").write_text(text)
    settings = load_project_config(repo).settings
    assert set(settings) == set(SETTINGS)
    assert settings["stop"] == 0.4 and settings["promote"] is True and settings["k1"] == 1.2
    assert settings["embed_long"] == "windows"


def test_an_unknown_key_names_the_file_and_the_valid_keys(repo: Path) -> None:
    (repo / "ctxselect.toml").write_text("max-bytes = 10\n")
    with pytest.raises(ConfigError) as caught:
        load_project_config(repo)
    message = str(caught.value)
    assert message.startswith(f"{repo / 'ctxselect.toml'}: unknown key 'max-bytes'")
    assert "did you mean 'max_bytes'?" in message
    assert "valid keys are " + ", ".join(SETTINGS) in message and "\n" not in message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("size = 0", "key 'size': chunk size must be a whole number from 1 to 1,000,000"),
        ("size = 256.0", "key 'size': chunk size must be a whole number"),
        ('chunker = "foo"', "key 'chunker': chunker must be one of auto, "),
        ('mode = "bm26"', "key 'mode': mode must be one of "),
        ('embedder = "big"', "key 'embedder': embedder must be one of "),
        (
            'embed_long = "all"',
            "key 'embed_long': embed_long must be one of auto, windows, truncate",
        ),
        ("k1 = true", "key 'k1': BM25 k1 must be a finite number from 0 to 10"),
        ("k = 0", "key 'k': k (number of hits) must be a whole number >= 1"),
        ('stop = "soon"', "key 'stop': unknown stop rule 'soon': use auto, none"),
        ("stop = 1.5", "key 'stop': stop threshold 1.5 is outside [0, 1]"),
        ('promote = "yes"', "key 'promote': promote must be true or false"),
        ("mmr = 2", "key 'mmr': mmr must be a finite number from 0 to 1"),
        ('index = ""', "key 'index': index must be a folder path"),
        ("size = 100\noverlap = 100", "key 'overlap': chunk overlap must be smaller than"),
        (  # no size key: index and chunk would cut with the default size
            f"overlap = {DEFAULT_CHUNK_SIZE}",
            f"key 'overlap': chunk overlap must be smaller than the size {DEFAULT_CHUNK_SIZE} "
            "(the default",
        ),
        ("[select]\nbudget = 1", "unknown key 'select'"),
    ],
)
def test_a_bad_value_names_the_file_the_key_and_the_valid_values(
    repo: Path, line: str, expected: str
) -> None:
    (repo / "ctxselect.toml").write_text(line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_project_config(repo)
    message = str(caught.value)
    assert message.startswith(f"{repo / 'ctxselect.toml'}: {expected}"), message
    assert "\n" not in message


def test_a_chunker_error_lists_the_registry(repo: Path) -> None:
    from ctxselect.api import names

    (repo / "ctxselect.toml").write_text('chunker = "foo"\n')
    with pytest.raises(ConfigError, match=", ".join(names("chunker"))):
        load_project_config(repo)


def test_pyproject_errors_name_the_table(repo: Path) -> None:
    pyproject = repo / "pyproject.toml"
    pyproject.write_text("[tool.ctxselect]\nbudjet = 1\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml \[tool.ctxselect\]: unknown key"):
        load_project_config(repo)
    pyproject.write_text('[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"no \[tool\.ctxselect\] table"):
        load_project_config(pyproject)  # given explicitly, the table must be there
    pyproject.write_text("[tool]\nctxselect = 3\n")
    with pytest.raises(ConfigError, match=r"tool\.ctxselect must be a table"):
        load_project_config(repo)


def test_bad_toml_and_a_missing_file_name_the_file(repo: Path) -> None:
    (repo / "ctxselect.toml").write_text("size = \n")
    with pytest.raises(ConfigError, match=r"ctxselect.toml: not valid TOML: .*line 1"):
        load_project_config(repo)
    with pytest.raises(ConfigError, match=r"nope\.toml does not exist"):
        load_project_config(repo / "nope.toml")


def test_an_explicit_file_may_have_any_name(repo: Path) -> None:
    other = repo / "a" / "ci.toml"
    other.write_text('format = "xml"\n')
    assert load_project_config(other) == ProjectConfig(str(other), {"format": "xml"})


def test_the_python_api_reads_no_config_file(repo: Path, monkeypatch) -> None:
    from ctxselect.api import index_paths, open_index

    (repo / "doc.md").write_text("# Title\n\n" + "word " * 200 + "\n")
    (repo / "ctxselect.toml").write_text('index = "elsewhere"\nsize = 64\nchunker = "tokens"\n')
    monkeypatch.chdir(repo)
    monkeypatch.delenv("CTXSELECT_INDEX", raising=False)
    index_paths([repo / "doc.md"])  # explicit arguments only: ./.ctxselect, default chunks
    assert (repo / ".ctxselect").is_dir() and not (repo / "elsewhere").exists()
    with open_index() as index:
        assert index.info().settings["chunk"]["size"] == 512

"""ctxselect.toml and [tool.ctxselect] as the CLI's defaults: flag > env > file > manifest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ctxselect.api.project import SETTINGS
from ctxselect.interfaces.cli import agent, commands, experiments, grep, store, tune  # noqa: F401
from ctxselect.interfaces.cli.main import cli
from ctxselect.interfaces.cli.project import APPLIES, option_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    unset: dict[str, str | None] = {"CTXSELECT_INDEX": None, "CTXSELECT_CONFIG": None}
    return CliRunner().invoke(cli, list(args), env={**unset, **(env or {})})


def ok(*args: str, env: dict[str, str] | None = None) -> Result:
    result = invoke(*args, env=env)
    assert result.exit_code == 0, result.output
    return result


def error(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    return result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a corpus in docs/, and the shell in docs/guide/ below its root."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    docs = root / "docs" / "guide"
    docs.mkdir(parents=True)
    (docs / "budget.md").write_text(
        "# Budgets\n\nA budget is counted in tokens, framing included.\n\n"
        "## Stops\n\nSelection stops where relevance drops.\n"
    )
    (docs / "rank.md").write_text("# Ranking\n\nBM25 ranks chunks; a budget caps the result.\n")
    monkeypatch.chdir(docs)
    return root


def select_json(*args: str, env: dict[str, str] | None = None) -> dict:
    return json.loads(ok("select", "budget", "--json", *args, env=env).stdout)


def test_the_nearest_file_up_from_here_sets_index_and_selection_defaults(project: Path) -> None:
    (project / "ctxselect.toml").write_text(
        'index = "build/ix"\nbudget = 300\nformat = "xml"\npacker = "greedy"\n'
    )
    ok("index", ".")
    assert (project / "build" / "ix").is_dir()  # relative to the file, not to the shell
    selection = select_json()
    assert (selection["budget"], selection["format"], selection["packer"]) == (
        300,
        "xml",
        "greedy",
    )
    assert json.loads(ok("search", "budget", "--json").stdout)[0]["doc_id"] == "budget.md"


def test_pyproject_tool_table_is_read(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.ctxselect]\nindex = ".ix"\nk = 1\n'
    )
    ok("index", ".")
    assert len(json.loads(ok("search", "budget", "--json").stdout)) == 1


def test_flags_win_over_the_file(project: Path, tmp_path: Path) -> None:
    (project / "ctxselect.toml").write_text('index = "ix"\nk = 1\nbudget = 300\n')
    other = str(tmp_path / "other")
    ok("index", ".", "--index", other)
    assert not (project / "ix").exists() and Path(other).is_dir()
    hits = json.loads(ok("search", "budget", "--index", other, "-k", "2", "--json").stdout)
    assert len(hits) == 2
    assert select_json("--index", other, "--budget", "500")["budget"] == 500


def test_the_environment_sits_between_flags_and_the_file(project: Path, tmp_path: Path) -> None:
    (project / "ctxselect.toml").write_text('index = "from-file"\n')
    env_ix, flag_ix = str(tmp_path / "from-env"), str(tmp_path / "from-flag")
    ok("index", ".", env={"CTXSELECT_INDEX": env_ix})
    assert Path(env_ix).is_dir() and not (project / "from-file").exists()
    ok("index", ".", "--index", flag_ix, env={"CTXSELECT_INDEX": env_ix})
    assert Path(flag_ix).is_dir()
    info = json.loads(ok("info", "--json", env={"CTXSELECT_INDEX": env_ix}).stdout)
    assert info["sources"][0] == {
        "setting": "index",
        "value": env_ix,
        "source": "env CTXSELECT_INDEX",
    }


def test_index_settings_go_into_the_manifest_and_a_flag_still_wins(project: Path) -> None:
    (project / "ctxselect.toml").write_text('index = "ix"\nchunker = "tokens"\nsize = 64\n')
    ok("index", ".")
    settings = json.loads(ok("info", "--json").stdout)["settings"]["chunk"]
    assert (settings["chunker"], settings["size"]) == ("tokens", 64)
    ok("index", ".", "--size", "128")
    assert json.loads(ok("info", "--json").stdout)["settings"]["chunk"]["size"] == 128
    chunks = json.loads(ok("chunk", "budget.md", "--json").stdout)
    assert chunks and all(c["n_tokens"] <= 64 for c in chunks)


def test_embed_long_from_the_file_reaches_the_index(project: Path) -> None:
    config = project / "ctxselect.toml"
    config.write_text('index = "ix"\nembedder = "hash"\nembed_long = "windows"\n')
    ok("index", ".")
    info = json.loads(ok("info", "--json").stdout)
    assert info["settings"]["embed_long"] == "whole (the model has no length limit)"
    sources = {row["setting"]: (row["value"], row["source"]) for row in info["sources"]}
    assert sources["embed_long"] == ("windows", f"config {config}")


def test_the_file_mode_beats_the_manifest_and_a_flag_beats_the_file(project: Path) -> None:
    (project / "ctxselect.toml").write_text('index = "ix"\n')
    ok("index", ".")
    assert json.loads(ok("explain", "budget", "--json").stdout)[0]["mode"] == "bm25"  # manifest
    (project / "ctxselect.toml").write_text('index = "ix"\nmode = "tfidf"\n')
    assert json.loads(ok("explain", "budget", "--json").stdout)[0]["mode"] == "tfidf"
    flagged = ok("explain", "budget", "--mode", "bm25", "--json").stdout
    assert json.loads(flagged)[0]["mode"] == "bm25"


def test_info_says_where_each_setting_came_from(project: Path) -> None:
    config = project / "ctxselect.toml"
    config.write_text('index = "ix"\nbudget = 300\nsize = 64\n')
    ok("index", ".", "--size", "100")
    info = json.loads(ok("info", "--json").stdout)
    sources = {row["setting"]: (row["value"], row["source"]) for row in info["sources"]}
    assert list(sources) == list(SETTINGS)
    assert sources["index"] == (str(project / "ix"), f"config {config}")
    assert sources["budget"] == (300, f"config {config}")
    assert sources["size"][1].startswith(f"config {config}; the index has 100 until")
    assert sources["chunker"] == ("auto", "index manifest")
    assert sources["mode"] == ("bm25", "index manifest")
    assert sources["packer"] == ("skip", "default") and sources["k"] == (10, "default")
    text = ok("info", "--index", str(project / "ix")).stdout
    lines = text.splitlines()
    assert f"setting.index = {project / 'ix'} (flag --index)" in lines
    assert f"setting.budget = 300 (config {config})" in lines
    assert "setting.promote = false (default)" in lines and "setting.mmr = none (default)" in lines


def test_no_config_and_an_explicit_config(project: Path, tmp_path: Path) -> None:
    (project / "ctxselect.toml").write_text('index = "ix"\nbudget = 300\n')
    ok("index", ".")
    ix = str(project / "ix")
    assert select_json("--index", ix)["budget"] == 300
    plain = json.loads(ok("--no-config", "select", "budget", "--index", ix, "--json").stdout)
    assert plain["budget"] == 2000
    other = tmp_path / "ci.toml"
    other.write_text("budget = 700\n")
    chosen = ok("--config", str(other), "select", "budget", "--index", ix, "--json").stdout
    assert json.loads(chosen)["budget"] == 700
    from_env = select_json("--index", ix, env={"CTXSELECT_CONFIG": str(other)})
    assert from_env["budget"] == 700


def test_help_shows_the_file_values_as_defaults(project: Path) -> None:
    (project / "ctxselect.toml").write_text('budget = 3000\nk = 25\nchunker = "tokens"\n')
    assert "[default: 3000]" in ok("select", "--help").stdout
    assert "[default: 25]" in ok("search", "--help").stdout
    assert "[default: tokens]" in ok("index", "--help").stdout  # shown though --chunker hides one
    assert "[default: tokens]" not in ok("--no-config", "index", "--help").stdout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("budjet = 300\n", "unknown key 'budjet': did you mean 'budget'? valid keys are index,"),
        ("budget = 50\n", "key 'budget': budget 50 is below the minimum of 100 tokens"),
        ("budget = 5\n", "key 'budget': budget 5 is below the minimum of 100 tokens"),
        (
            "budget = 100000001\n",
            "key 'budget': budget 100000001 is above the maximum of 100,000,000 tokens",
        ),
        ('budget = "800"\n', "key 'budget': budget must be a whole number of tokens, got '800'"),
        ('format = "html"\n', "key 'format': format must be one of "),
        ("k = -1\n", "key 'k': k (number of hits) must be a whole number >= 1"),
        ("size = [1]\n", "key 'size': chunk size must be a whole number"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_key(
    project: Path, text: str, expected: str
) -> None:
    config = project / "ctxselect.toml"
    config.write_text(text)
    message = error("search", "budget")
    assert message.startswith(f"error: {config}: {expected}"), message


def test_the_budget_flag_and_the_file_share_one_range_and_message(project: Path) -> None:
    from ctxselect.config import MAX_BUDGET, MIN_BUDGET

    for budget, why in [(MAX_BUDGET + 1, "above the maximum of 100,000,000 tokens"),
                        (100_000_000_000, "above the maximum of 100,000,000 tokens"),
                        (MIN_BUDGET - 1, "below the minimum of 100 tokens")]:  # fmt: skip
        flag = invoke("select", "budget", "--budget", str(budget))
        assert flag.exit_code == 2, flag.output
        assert f"Invalid value for '--budget': budget {budget} is {why}" in flag.stderr
        (project / "ctxselect.toml").write_text(f"budget = {budget}\n")
        assert f"key 'budget': budget {budget} is {why}" in error("select", "budget")
        (project / "ctxselect.toml").unlink()
    (project / "ctxselect.toml").write_text(f"budget = {MAX_BUDGET}\n")  # the top is allowed
    assert "[default: 100000000]" in ok("select", "budget", "--help").stdout


def test_a_bad_pyproject_table_is_named(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.ctxselect]\nmode = "fast"\n')
    message = error("select", "budget")
    assert f"{project / 'pyproject.toml'} [tool.ctxselect]: key 'mode'" in message


def test_every_key_reaches_a_real_option() -> None:
    # a renamed flag would silently drop a config key: each listed command must have it
    for key in SETTINGS:
        names = APPLIES.get(key, ())
        assert names or key == "index"
        for name in names:
            assert option_for(cli.commands[name], name, key) is not None, (key, name)
    reading_index = [n for n, c in cli.commands.items() if option_for(c, n, "index")]
    assert {"index", "search", "select", "info", "mcp", "grep"} <= set(reading_index)
    assert "eval" not in reading_index


def test_the_docs_table_lists_every_key() -> None:
    section = DOCS.read_text(encoding="utf-8").split("## Project config", 1)[1]
    keys = re.findall(r"^\| `([a-z_0-9]+)` \|", section, re.M)
    assert keys == list(SETTINGS)


def test_a_flag_turns_off_mmr_and_promote_set_in_the_file(project: Path) -> None:
    (project / "docs" / "guide" / "stops.md").write_text(
        "# Stopping\n\n## When to stop\n\n"
        + "\n\n".join(
            f"Rule {n}: the budget caps what is selected here and now."
            if n
            else "Rule 0: something unrelated to everything else in this file."
            for n in range(3)
        )
        + "\n"  # two of the section's four chunks match: promote sends all four
    )
    (project / "ctxselect.toml").write_text('index = "ix"\nchunker = "markdown"\nsize = 16\n')
    ok("index", ".")
    plain = select_json("--stop", "none")
    (project / "ctxselect.toml").write_text('index = "ix"\npromote = true\nmmr = 0.5\n')
    # the file's mmr needs dense vectors this index lacks; --mmr none turns it off
    assert "mmr" in error("select", "budget", "--stop", "none")
    assert select_json("--stop", "none", "--mmr", "none", "--no-promote") == plain
    (project / "ctxselect.toml").write_text('index = "ix"\npromote = true\n')
    assert select_json("--stop", "none") != plain  # the file's promote = true widens
    assert select_json("--stop", "none", "--no-promote") == plain
    bad = invoke("select", "budget", "--mmr", "some")
    assert bad.exit_code == 2 and "--mmr none for no MMR" in bad.stderr

"""Ctrl-C during a write command: a clear line saying the index is intact, exit 130."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from ctxselect.interfaces.cli import commands, store  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli


def invoke(*args: str) -> Result:
    env: dict[str, str | None] = {"CTXSELECT_INDEX": None, "CTXSELECT_CONFIG": None}
    return CliRunner().invoke(cli, ["--no-config", *args], env=env)


def corpus(tmp_path: Path) -> str:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "p0.md").write_text("# Page\n\nalpha beta gamma", encoding="utf-8")
    return str(root)


def settings(ix: str) -> dict:
    return json.loads(invoke("info", "--index", ix, "--json").stdout)["settings"]


def test_ctrl_c_during_a_write_says_the_index_is_intact_and_exits_130(tmp_path, monkeypatch):
    from ctxselect.api import maintain, write

    ix = str(tmp_path / "ix")
    docs = corpus(tmp_path)
    assert invoke("index", docs, "--index", ix).exit_code == 0

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    for name in ("index_paths", "add_paths", "remove_documents"):
        monkeypatch.setattr(write, name, interrupted)
    monkeypatch.setattr(maintain, "compact_index", interrupted)
    for args in (
        ("index", "--index", ix, "--size", "64"),
        ("add", str(Path(docs) / "p0.md"), "--index", ix),
        ("remove", "p0.md", "--index", ix),
        ("compact", "--index", ix),
    ):
        result = invoke(*args)
        assert result.exit_code == 130, (args, result.output)
        assert result.stderr.startswith("interrupted: the index is as the last completed write")
        assert "Aborted!" not in result.output
    assert settings(ix)["chunk"]["size"] == 512

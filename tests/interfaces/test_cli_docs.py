"""docs/cli.md is generated from --help: stale or missing commands fail here."""

from __future__ import annotations

from pathlib import Path

from ctxselect.interfaces.cli.docgen import cli_reference
from ctxselect.interfaces.cli.main import cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
REGENERATE = "python -m ctxselect.interfaces.cli.docgen > docs/cli.md"


def test_every_command_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in cli.commands if f"## ctxselect {name}\n" not in text]
    assert missing == [], f"undocumented commands {missing}: run `{REGENERATE}`"


def test_cli_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == cli_reference(), f"stale: run `{REGENERATE}`"

"""The chapters' commands name real options and run as written.

``tests/interfaces/test_cli_readme.py`` runs README.md and docs/01-quickstart.md in full.
The other chapters also show commands on corpora a reader brings (``./handbook``,
``runbook/keys.md#3``); those cannot run anywhere, so a command runs when every input it
names exists in a clone (``docs/``, ``src/``, ``../shared/datasets``) or was made by an
earlier command of the same chapter. Each chapter runs in order in its own copy, as a
reader who did the quickstart would (``CTXSELECT_INDEX`` names an index of ``docs/``).
Every ``ctxselect`` line, runnable or not, must name only options its command has.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from _support.datasets import REPO, dataset_dir, datasets_root
from ctxselect.interfaces.cli.main import cli, register_commands

register_commands()

CHAPTERS = (
    *(f"docs/{n:02d}-{name}.md" for n, name in [
        (2, "ingest"), (3, "chunking"), (4, "tokens"), (5, "retrieval"), (6, "explain"),
        (7, "budget"), (8, "evaluation"), (9, "index"), (10, "roadmap"), (12, "updates"),
        (13, "dense-hybrid"), (15, "parallel-ingestion"), (16, "adapters"),
    ]),
    "docs/formats.md",
)  # fmt: skip
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`(ctxselect [a-z]+ [^`]*)`")
HEAVY = re.compile(r"minilm|--executor ray|\.\./shared/datasets")  # minutes: slow
BIN = Path(sys.executable).parent
INPUT_OPTIONS = {"--corpus", "--queries", "--qrels", "--grid", "--config"}
PATH_ARGS = {"index", "add", "chunk"}  # commands whose arguments are files or folders
NEVER = ("--watch", "ray://")  # runs until Ctrl-C; a cluster that does not exist
RUN = frozenset({"", "sh", "bash"})  # fences of commands; console fences show a sample
SHOWN = RUN | {"console"}  # run or not, their options must exist


def command_lines(text: str, langs: frozenset[str] = RUN) -> list[str]:
    """Every ``ctxselect`` line of the fences (continuations joined, ``$ `` dropped)."""
    lines: list[str] = []
    for match in FENCE.finditer(text):
        if match[1] not in langs:
            continue
        pending = ""
        for raw in match[2].splitlines():
            pending += raw.strip().removeprefix("$ ")
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
                continue
            if pending.startswith("ctxselect "):
                lines.append(pending)
            pending = ""
    return lines


def words(line: str) -> list[str]:
    """The words of the ``ctxselect`` command alone: comments, pipes and redirections cut."""
    out: list[str] = []
    for word in shlex.split(line, comments=True):
        if word in {"|", ">", "&&", ";"}:
            break
        out.append(word)
    return out


def options_of(name: str) -> set[str]:
    command = cli.commands[name]
    return {o for p in command.params if isinstance(p, click.Option) for o in p.opts}


def unknown_options(line: str) -> list[str]:
    parts = words(line)
    name = parts[1]
    if name not in cli.commands:
        return [name]
    known = options_of(name) | {"--help", "-h"}
    flags = [w.split("=")[0] for w in parts[2:] if w.startswith("-") and len(w) > 1]
    return [f for f in flags if f not in known and not re.fullmatch(r"-?\d[\d.]*", f)]


def inputs(parts: list[str]) -> list[str]:
    """The files, folders and chunk ids a command reads (outputs left out)."""
    name, args, found = parts[1], parts[2:], []
    command = cli.commands[name]
    takes_value = {o for p in command.params if isinstance(p, click.Option) and not p.is_flag
                   for o in p.opts}  # fmt: skip
    i = 0
    while i < len(args):
        word = args[i]
        if word in takes_value:
            value = args[i + 1] if i + 1 < len(args) else ""
            if word in INPUT_OPTIONS or (word == "--index" and name not in {"index", "lab"}):
                found.append(value)
            elif word == "--chunk-id":
                found.append("docs/" + value.split("#")[0])
            i += 2
            continue
        if not word.startswith("-"):
            if name in PATH_ARGS:
                found.append(word)
            elif name == "remove":
                found.append("docs/" + word)
        i += 1
    return found


def runnable(line: str, cwd: Path) -> bool:
    if any(n in line for n in NEVER):
        return False
    return all((cwd / os.path.expanduser(p)).exists() for p in inputs(words(line)))


def clone(tmp_path: Path) -> Path:
    """A clone's layout with docs/ and src/, and ../shared/datasets when available."""
    root = tmp_path / "work" / "ctxselect"
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    if datasets_root().is_dir():
        (tmp_path / "work" / "shared").mkdir()
        (tmp_path / "work" / "shared" / "datasets").symlink_to(datasets_root())
    return root


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip


def python_blocks(text: str) -> list[str]:
    """Python fences that are whole programs (they import what they use)."""
    blocks = [m[2] for m in FENCE.finditer(text) if m[1] == "python"]
    return [b for b in blocks if re.match(r"(import|from) ", b)]


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_option_shown_exists(name: str) -> None:
    text = (REPO / name).read_text(encoding="utf-8")
    shown = command_lines(text, SHOWN) + INLINE.findall(text)
    bad = {line: unknown_options(line) for line in shown}
    assert {line: u for line, u in bad.items() if u} == {}


SHOW_NO_RUN = ("docs/02-ingest.md", "docs/10-roadmap.md")
"""Chapters whose examples need files a clone does not hold (or that show none): their
options are still checked against --help above."""


def chapter_params() -> list[object]:
    out: list[object] = []
    for name in CHAPTERS:
        if name in SHOW_NO_RUN:
            continue
        text = (REPO / name).read_text(encoding="utf-8")
        runs = "\n".join(command_lines(text) + python_blocks(text))
        heavy = HEAVY.search(runs) is not None
        out.append(pytest.param(name, marks=pytest.mark.slow) if heavy else name)
    return out


@pytest.mark.parametrize("name", chapter_params())
def test_runnable_commands_run_as_written(name: str, tmp_path: Path) -> None:
    text = (REPO / name).read_text(encoding="utf-8")
    runs = "\n".join(command_lines(text) + python_blocks(text))
    for dataset in sorted(set(re.findall(r"\.\./shared/datasets/(\w+)", runs))):
        dataset_dir(dataset)  # skip here, fail under CI, when they are missing
    cwd = clone(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["CTXSELECT_INDEX"] = "./my-index"  # the quickstart's index of docs/
    assert run(["ctxselect", "index", "docs", "--index", "./my-index"], cwd, env).returncode == 0
    failures, ran = [], 0
    for line in command_lines(text):
        if not runnable(line, cwd):
            continue
        done = run(["bash", "-c", line], cwd, env)
        ran += 1
        if done.returncode != 0:
            failures.append(f"{line}\n  exit {done.returncode}: {done.stderr.strip()[-600:]}")
    for number, block in enumerate(python_blocks(text)):
        script = cwd / f"snippet_{number}.py"
        script.write_text(block, encoding="utf-8")
        done = run([sys.executable, str(script)], cwd, env)
        ran += 1
        if done.returncode != 0:
            failures.append(f"python block {number}\n  {done.stderr.strip()[-600:]}")
    assert not failures, "\n".join(failures)
    assert ran, f"{name} shows no command whose inputs a clone holds: list it in SHOW_NO_RUN"

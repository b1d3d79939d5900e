"""Every command in README.md and docs/01-quickstart.md runs as written on a fresh clone.

The commands are extracted from the ```sh and ```python fences (never listed here) and run
in order, each document in its own temporary copy of the repository's docs/, with the
working directory where a clone's root would be. A ```console fence shows a command after
``$ `` and the output it prints: that output is checked too. Commands that read
``../shared/datasets`` run when the datasets are there (skipped otherwise, failed under CI).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from _support.datasets import REPO, dataset_dir, datasets_root

DOCUMENTS = ("README.md", "docs/01-quickstart.md")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
DATASET = re.compile(r"\.\./shared/datasets/(\w+)")
SETUP = ("make ",)  # the set-up commands themselves; `make demo` is what the README assumes
TIMEOUT = 600  # seconds per command: the minilm commands load a model (~10 s)
BIN = Path(sys.executable).parent


@dataclass(frozen=True, slots=True)
class Snippet:
    """One command line (continuations joined) or Python block, and where it came from."""

    lang: str  # sh, python or console
    text: str
    line: int
    expected: str = ""  # console: the output shown under the command


def fences(text: str) -> list[tuple[str, str, int]]:
    """Return (language, body, first line number) of every fenced block in ``text``."""
    return [(m[1], m[2], text.count("\n", 0, m.start()) + 2) for m in FENCE.finditer(text)]


def snippets(path: Path) -> list[Snippet]:
    """Extract the runnable snippets of one Markdown document, in document order."""
    out: list[Snippet] = []
    for lang, body, line in fences(path.read_text(encoding="utf-8")):
        if lang == "python":
            out.append(Snippet("python", body, line))
        elif lang == "sh":
            out.extend(shell_lines(body, line))
        elif lang == "console":
            command, _, shown = body.partition("\n")
            out.append(Snippet("console", command.removeprefix("$ "), line, shown.strip()))
    return out


def shell_lines(body: str, first: int) -> list[Snippet]:
    """Split a shell block into command lines, joining ``\\`` continuations."""
    out: list[Snippet] = []
    pending, start = "", first
    for number, raw in enumerate(body.splitlines(), start=first):
        if not pending:
            start = number
        pending += raw.strip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending and not pending.startswith("#"):
            out.append(Snippet("sh", pending, start))
        pending = ""
    return out


def clone(tmp_path: Path) -> Path:
    """A fresh clone's layout: docs/ copied, ../shared/datasets beside it when available."""
    root = tmp_path / "work" / "ctxselect"
    shutil.copytree(REPO / "docs", root / "docs")
    shared = datasets_root()
    if shared.is_dir():
        (tmp_path / "work" / "shared").mkdir()
        (tmp_path / "work" / "shared" / "datasets").symlink_to(shared)
    return root


def run_snippet(snippet: Snippet, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run one snippet the way a reader would: a shell line, or a Python file."""
    if snippet.lang == "python":
        script = cwd.parent / "readme_snippet.py"
        script.write_text(snippet.text, encoding="utf-8")
        args: list[str] = [sys.executable, str(script)]
    else:
        args = ["bash", "-c", snippet.text]
    # stdin closed: `ctxselect mcp` serves stdio until its client leaves, here at once
    return subprocess.run(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def check_document(name: str, tmp_path: Path) -> list[str]:
    """Run every snippet of ``name`` in order; return the failures and the datasets missed."""
    cwd = clone(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("CTXSELECT_INDEX", None)
    found = snippets(REPO / name)
    assert found, f"no runnable snippet found in {name}"
    failures, missing, timings = [], set(), []
    for snippet in found:
        where = f"{name}:{snippet.line}: {snippet.text.splitlines()[0]}"
        if snippet.text.startswith(SETUP):
            continue
        export = re.fullmatch(r"export (\w+)=(\S+)", snippet.text)
        if export:
            env[export[1]] = export[2]
            continue
        needs = set(DATASET.findall(snippet.text))
        if needs and not all((datasets_root() / n / "corpus.jsonl").is_file() for n in needs):
            missing |= needs
            continue
        started = time.perf_counter()
        result = run_snippet(snippet, cwd, env)
        timings.append((time.perf_counter() - started, where))
        if snippet.lang == "console":
            shown = (result.stdout + result.stderr).strip()
            if shown != snippet.expected:
                failures.append(f"{where}\n  shows {snippet.expected!r}\n  prints {shown!r}")
        elif result.returncode != 0:
            failures.append(f"{where}\n  exit {result.returncode}: {result.stderr.strip()[-800:]}")
    print("\n".join(f"{s:6.1f} s  {w}" for s, w in sorted(timings, reverse=True)))
    assert not failures, "\n".join(failures)
    return sorted(missing)


def test_readme_keeps_exactly_two_setup_commands() -> None:
    setup = [s.text for s in snippets(REPO / "README.md") if s.text.startswith(SETUP)]
    assert [s.split("#")[0].strip() for s in setup] == ["make demo", "make test"]


def test_every_documented_command_is_in_a_checked_fence() -> None:
    """A command in a fence of another language would escape the run below."""
    for name in DOCUMENTS:
        for lang, body, line in fences((REPO / name).read_text(encoding="utf-8")):
            if lang not in {"sh", "python", "console"}:
                assert not re.search(r"^\s*(\$ )?ctxselect ", body, re.M), f"{name}:{line}"


# The README's minilm commands load a model: about a minute in all, so it is marked slow.
@pytest.mark.parametrize(
    "name", [pytest.param("README.md", marks=pytest.mark.slow), "docs/01-quickstart.md"]
)
def test_documented_commands_run_as_written(name: str, tmp_path: Path) -> None:
    missing = check_document(name, tmp_path)
    for dataset in missing:  # everything else ran; now skip, or fail under CI
        dataset_dir(dataset)

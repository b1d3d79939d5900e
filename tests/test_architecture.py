"""The layout is the pipeline: stages do not import each other, and imports stay light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ctxselect"
STAGES = {"ingest", "chunk", "tokens", "index", "retrieve", "rerank", "budget", "eval"}
# Chunk sizes are measured in a named tokenizer, so chunkers may use token counters;
# the writer stores into a store. Every other composition happens in api.py.
ALLOWED = {("chunk", "tokens"), ("index", "stores")}
READ_PATH = {"retrieve", "budget"}
# The facade: the only modules that compose stages (the CLI and MCP server call these).
FACADE = {
    "api",
    "modes",
    "examples",
    "experiments",
    "indexing",
    "sessions",
    "selections",
    "sweeps",
    "tuning",
    "watching",
}
WRITE_PATH = {"ingest", "chunk", "index"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n.startswith("ctxselect.")}


def _package_of(module: str) -> str:
    return module.split(".")[1]


def test_stage_packages_do_not_import_each_other() -> None:
    offenders = []
    checked = STAGES | FACADE | {"stores", "interfaces"}
    for stage in STAGES:
        for path in (SRC / stage).rglob("*.py") if (SRC / stage).is_dir() else []:
            for module in _imports(path):
                target = _package_of(module)
                if target in checked and target != stage and (stage, target) not in ALLOWED:
                    offenders.append(f"{path.relative_to(SRC)} imports {module}")
    assert offenders == []


def test_read_path_does_not_import_write_path() -> None:
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for stage in READ_PATH
        for path in (SRC / stage).rglob("*.py")
        for module in _imports(path)
        if _package_of(module) in WRITE_PATH
    ]
    assert offenders == []


def test_interfaces_use_only_the_api_and_values() -> None:
    allowed = FACADE | {"types", "errors", "config", "manifest", "interfaces", "_require"}
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in (SRC / "interfaces").rglob("*.py")
        for module in _imports(path)
        if _package_of(module) not in allowed
    ]
    assert offenders == []


def test_the_manifest_is_a_value_both_paths_read() -> None:
    # the typed manifest (a root module) imports only other root values, so the read path
    # (open_index) and the write path (indexing) read it without importing each other
    assert _imports(SRC / "manifest.py") <= {"ctxselect.config", "ctxselect.errors"}


def test_import_ctxselect_stays_light() -> None:
    code = "import ctxselect, sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = set(__import__("json").loads(out))
    heavy = {
        "torch",
        "matplotlib",
        "mcp",
        "pymilvus",
        "sentence_transformers",
        "click",
        "bm25s",
        "tantivy",
        "pytrec_eval",
        "scipy",
    }
    assert loaded & heavy == set()


def test_init_has_no_logic() -> None:
    tree = ast.parse((SRC / "__init__.py").read_text(encoding="utf-8"))
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Import", "Assign"}


def test_only_stores_know_the_embedded_store() -> None:
    # Composition code opens stores with open_store(uri) and types them as the Store
    # protocol; the implementation is chosen in stores/open.py alone (no exceptions).
    embedded = "ctxselect.stores.embedded"
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.is_relative_to(SRC / "stores"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = _imports(path) | {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        offenders += [
            f"{path.relative_to(SRC)} names {name}"
            for name in sorted(named)
            if name == embedded or name.startswith(embedded + ".")
        ]
    assert offenders == []

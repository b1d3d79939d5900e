"""The layout is the pipeline: stages do not import each other, and imports stay light.

The package root holds values only; ``api/`` composes the stages and ``agent/`` serves
sessions and examples on top of it; interfaces (and the framework adapters, which nothing
imports) import those two and the values. The read path (``open_index``, ``Index.search``,
``Index.select``, the MCP server) never loads the write path.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ctxselect"
STAGES = {"ingest", "chunk", "tokens", "embed", "index", "retrieve", "rerank", "budget", "eval"}
# Chunk sizes are measured in a named tokenizer, so chunkers may use token counters;
# the writer stores into a store. Every other composition happens in api/.
ALLOWED = {("chunk", "tokens"), ("index", "stores")}
READ_PATH = {"retrieve", "budget"}
# The composition layer (api/) and the agent layer (agent/): the only packages that
# compose stages. The CLI and the MCP server call these.
FACADE = {"api", "agent"}
# The package root: values and the registry, nothing that composes.
ROOT_MODULES = {
    "__init__.py",
    "__main__.py",
    "_require.py",
    "config.py",
    "errors.py",
    "front_matter.py",
    "manifest.py",
    "registry.py",
    "reports.py",
    "tool_results.py",
    "types.py",
}
ROOT_PACKAGES = STAGES | FACADE | {"stores", "interfaces", "adapters"}
VALUES = {
    "types",
    "reports",
    "tool_results",
    "errors",
    "front_matter",
    "config",
    "manifest",
    "registry",
    "_require",
}
WRITE_PATH = {"ingest", "chunk", "index"}
# What a search must not load: the write-path stages and the write side of api/.
WRITE_MODULES = (
    "ctxselect.ingest",
    "ctxselect.chunk",
    "ctxselect.index",
    "ctxselect.api.write",
    "ctxselect.api.sync",
    "ctxselect.api.modes",
    "ctxselect.api.parallel",
    "ctxselect.api.watch",
)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "ctxselect":  # `from ctxselect import api` imports ctxselect.api
                names.update(f"ctxselect.{alias.name}" for alias in node.names)
    return {n for n in names if n.startswith("ctxselect.")}


def _package_of(module: str) -> str:
    return module.split(".")[1]


def test_stage_packages_do_not_import_each_other() -> None:
    offenders = []
    checked = STAGES | FACADE | {"stores", "interfaces", "adapters"}
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


def test_the_root_holds_only_values_and_packages() -> None:
    modules = {path.name for path in SRC.glob("*.py")}
    packages = {path.parent.name for path in SRC.glob("*/__init__.py")}
    assert modules == ROOT_MODULES
    assert packages == ROOT_PACKAGES


def test_interfaces_use_only_the_api_and_values() -> None:
    allowed = FACADE | VALUES | {"interfaces"}
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in (SRC / "interfaces").rglob("*.py")
        for module in _imports(path)
        if _package_of(module) not in allowed
    ]
    assert offenders == []


def test_adapters_use_only_the_api_and_values() -> None:
    # the framework adapters are interfaces too: LangChain and LlamaIndex retrievers over api/
    allowed = FACADE | VALUES | {"adapters"}
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in (SRC / "adapters").rglob("*.py")
        for module in _imports(path)
        if _package_of(module) not in allowed
    ]
    assert offenders == []


def test_nothing_imports_the_adapters() -> None:
    # a framework loads only when its adapter module is imported by the user
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in SRC.rglob("*.py")
        if not path.is_relative_to(SRC / "adapters")
        for module in _imports(path)
        if _package_of(module) == "adapters"
    ]
    assert offenders == []


def test_the_manifest_is_a_value_both_paths_read() -> None:
    # the typed manifest (a root module) imports only other root values, so the read path
    # (open_index) and the write path (indexing) read it without importing each other
    assert _imports(SRC / "manifest.py") <= {"ctxselect.config", "ctxselect.errors"}


READ_PATH_SCRIPT = """
import json, sys
import anyio
from mcp import Client
from ctxselect.api import open_index
from ctxselect.interfaces.mcp_server import build_server

folder = sys.argv[1]
with open_index(folder) as index:
    hits = index.search("cache eviction", k=3)
    selection = index.select("cache eviction", 200)


async def search_tool():
    async with Client(build_server(open_index(folder))) as client:
        return await client.call_tool("search", {"query": "cache eviction", "k": 3})


result = anyio.run(search_tool)
print(json.dumps({
    "hits": [h.doc_id for h in hits],
    "selected": [c.doc_id for c in selection.chunks],
    "tool_error": result.is_error,
    "tool_hits": [h["doc_id"] for h in result.structured_content["hits"]],
    "modules": sorted(sys.modules),
}))
"""


def test_the_read_path_does_not_load_the_write_path(tmp_path: Path) -> None:
    from ctxselect.api import index_paths

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "cache.md").write_text("# Cache\n\nThe cache evicts old entries first.\n")
    (corpus / "retry.md").write_text("# Retries\n\nFailed requests back off and retry.\n")
    index_paths([corpus], tmp_path / "ix")
    out = subprocess.run(
        [sys.executable, "-c", READ_PATH_SCRIPT, str(tmp_path / "ix")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    run = json.loads(out)
    # the read path really ran: search, select and the MCP search tool found the document
    assert run["hits"][0] == run["selected"][0] == run["tool_hits"][0] == "cache.md"
    assert run["tool_error"] is False
    assert "ctxselect.interfaces.mcp_server" in run["modules"]
    loaded = [
        name
        for name in run["modules"]
        if any(name == m or name.startswith(m + ".") for m in WRITE_MODULES)
    ]
    assert loaded == []


def test_import_ctxselect_stays_light() -> None:
    code = "import ctxselect, sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = set(json.loads(out))
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
        "langchain_core",
        "llama_index",
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports at run time (inside functions too; not under
    ``if TYPE_CHECKING``); ``from pkg import sub`` counts as importing ``pkg.sub``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return found & modules


def test_no_modules_import_each_other_in_a_circle() -> None:
    # A circle makes import order matter and hides which module depends on which.
    paths = {_module_name(path): path for path in SRC.rglob("*.py")}
    graph = {name: _runtime_imports(path, set(paths)) - {name} for name, path in paths.items()}
    reach = {name: set(targets) for name, targets in graph.items()}
    changed = True
    while changed:  # transitive closure: a few thousand set unions, well under a second
        changed = False
        for targets in reach.values():
            more = set().union(*(reach[t] for t in targets)) - targets
            if more:
                targets |= more
                changed = True
    circles = sorted(name for name, targets in reach.items() if name in targets)
    assert circles == []

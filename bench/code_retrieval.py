"""Code retrieval, the CodeSearchNet way, on installed Python packages nobody here wrote.

For each package (click, tqdm, markdown-it-py, ...): every function or method with a
docstring becomes a query (the docstring's first sentence) whose single relevant target is
that function; the sources are indexed with every docstring removed (CodeSearchNet,
Husain et al. 2019). A chunk is judged relevant when it overlaps the function's span
(its decorators to its last line) in the stripped file: the code chunker may cut a long
function in several chunks, and a token window may hold several functions; both count
as finding it. Functions named ``test*``, dunder methods, and first sentences under three
words or shared by two functions are left out (CodeSearchNet's filters, roughly).

Every figure comes from the product's path: ``index_paths`` over the stripped files
(chunk size 512 cl100k tokens, the default), ``Index.search_many`` at depth 100, and
``Index.pack`` (skip packer, markdown framing) for the 1,000-token selection.

    .venv/bin/python bench/code_retrieval.py [--packages click,tqdm] [--no-hybrid] [--write-docs]
    .venv/bin/python bench/code_retrieval.py --windows [--write-docs]

``--windows`` measures instead how minilm embeds code chunks longer than the 256 word
pieces it reads: truncated there or whole, as pooled windows (``index --embed-long
windows``; ``auto``, the default, chooses windows for an index whose chunks are mostly
code), dense alone and fused, next to the keyword figure.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, replace_section

DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- code-retrieval:start -->", "<!-- code-retrieval:end -->"
PACKAGES = ("click", "tqdm", "markdown_it", "pathspec", "jinja2", "requests")
DEPTH, BUDGET = 100, 1000
SENTENCE = re.compile(r"(?<=[.!?])\s|\n\s*\n")
# name: (chunker, identifier parts, mode, how minilm embeds a long chunk)
SETTINGS = {
    "tokens + plain (today)": ("tokens", False, "bm25", "truncate"),
    "code + plain": ("code", False, "bm25", "truncate"),
    "code + identifiers": ("code", True, "bm25", "truncate"),
    "hybrid (minilm), code + identifiers": ("code", True, "hybrid", "truncate"),
}
WINDOW_SETTINGS = {
    "code + identifiers": ("code", True, "bm25", "truncate"),
    "dense, truncate": ("code", True, "dense", "truncate"),
    "dense, windows": ("code", True, "dense", "windows"),
    "hybrid, truncate": ("code", True, "hybrid", "truncate"),
    "hybrid, windows": ("code", True, "hybrid", "windows"),
}
WINDOWS_START, WINDOWS_END = "<!-- code-windows:start -->", "<!-- code-windows:end -->"
BASELINE, TARGET_SETTING, TARGET_GAIN = "tokens + plain (today)", "code + identifiers", 0.05


@dataclass(frozen=True)
class Target:
    """One query and the function it should find."""

    qid: str
    query: str
    doc_id: str
    start: int
    end: int


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence, whitespace collapsed."""
    head = SENTENCE.split(docstring.strip(), maxsplit=1)[0]
    return " ".join(head.split())


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstring_node(node: ast.AST) -> ast.Expr | None:
    body = node.body if isinstance(node, DOCUMENTED) else None
    if not body or not isinstance(body[0], ast.Expr):
        return None
    value = body[0].value
    return body[0] if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def strip_docstrings(source: str) -> str:
    """Remove every module, class and function docstring (``...`` where it was the body)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in ast.walk(tree):
        doc = _docstring_node(node)
        if doc is None or doc.end_lineno is None:
            continue
        if not isinstance(node, ast.Module) and doc.lineno == node.lineno:
            continue  # docstring on the def line: left as it is
        first, last = doc.lineno - 1, doc.end_lineno
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        only = len(getattr(node, "body", ())) == 1 and not isinstance(node, ast.Module)
        lines[first] = f"{indent}...\n" if only else ""
        for i in range(first + 1, last):
            lines[i] = ""
    return "".join(lines)


def _span(text: str, line_starts: list[int], node: Any) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = line_starts[node.end_lineno] if node.end_lineno < len(line_starts) else len(text)
    return line_starts[first - 1], end


def package_targets(package: str, out: Path) -> list[Target]:
    """Write ``package``'s stripped sources under ``out``; return its queries and targets."""
    root = Path(importlib.import_module(package).__file__ or "").parent
    found: dict[str, list[Target]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        try:
            stripped = strip_docstrings(source)
            pairs = zip(_functions(ast.parse(source)), _functions(ast.parse(stripped)), strict=True)
        except (SyntaxError, ValueError):
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(stripped, encoding="utf-8")
        line_starts = [0] + [m.end() for m in re.finditer("\n", stripped)]
        for old, new in pairs:
            doc = ast.get_docstring(old)
            name = old.name
            if not doc or "test" in name.lower() or (name.startswith("__") and name.endswith("__")):
                continue
            query = first_sentence(doc)
            if len(query.split()) < 3 or _docstring_node(old).lineno == old.lineno:  # type: ignore[union-attr]
                continue
            start, end = _span(stripped, line_starts, new)
            qid = f"{package}/{rel}:{old.lineno}"
            found.setdefault(query, []).append(Target(qid, query, rel, start, end))
    return [group[0] for group in found.values() if len(group) == 1]


def _relevant(target: Target, doc_id: str, start: int, end: int) -> bool:
    return doc_id == target.doc_id and start < target.end and end > target.start


def measure(idx: Any, targets: list[Target], mode: str) -> dict[str, float]:
    """MRR@10 of the ranked chunks, recall@1000t of their selection (one target: a hit)."""
    queries = {t.qid: t.query for t in targets}
    started = time.perf_counter()
    hits = idx.search_many(queries, DEPTH, mode)
    seconds = time.perf_counter() - started
    mrr = recall = 0.0
    for t in targets:
        ranked = hits.get(t.qid, [])
        rank = next((h.rank for h in ranked[:10] if _relevant(t, h.doc_id, h.start, h.end)), None)
        mrr += 1.0 / rank if rank else 0.0
        selection = idx.pack(ranked, BUDGET, packer="skip", format="markdown")
        recall += any(_relevant(t, p.doc_id, p.start, p.end) for p in selection.chunks)
    n = max(len(targets), 1)
    return {"mrr@10": mrr / n, f"recall@{BUDGET}t": recall / n, "ms/query": 1000 * seconds / n}


def run_package(package: str, tmp: Path, settings: dict[str, tuple[str, bool, str, str]]) -> dict:
    from ctxselect import BM25Params, ChunkSpec, open_index
    from ctxselect.api.write import index_paths

    src = tmp / package / "src"
    targets = package_targets(package, src)
    row: dict[str, Any] = {"package": package, "queries": len(targets), "results": {}}
    built: dict[tuple[str, bool, bool, str], Path] = {}
    for name, (chunker, identifiers, mode, embed_long) in settings.items():
        dense = mode != "bm25"
        key = (chunker, identifiers, dense, embed_long if dense else "")
        if key not in built:
            label = f"{chunker}-{int(identifiers)}-{int(dense)}-{key[3]}"
            folder = built[key] = tmp / package / f"ix-{label}"
            report = index_paths(
                [src],
                folder,
                chunk=ChunkSpec(chunker=chunker),
                bm25=BM25Params(identifiers=identifiers),
                embedder="minilm" if dense else "none",
                embed_long=embed_long if dense else None,
            )
            row.setdefault("chunks", {})[chunker] = report.chunks
        with open_index(built[key]) as idx:
            row["results"][name] = measure(idx, targets, mode)
        print(json.dumps({"package": package, "setting": name, **row["results"][name]}))
    return row


def table(rows: list[dict], names: list[str]) -> list[str]:
    """The Markdown table: a row per package, MRR@10 / recall of each setting."""
    lines = [
        "| package | queries | " + " | ".join(f"{n}: MRR@10 / R@{BUDGET}t" for n in names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for row in rows:
        cells = [
            f"{row['results'][n]['mrr@10']:.3f} / {row['results'][n][f'recall@{BUDGET}t']:.3f}"
            for n in names
        ]
        lines.append(f"| {row['package']} | {row['queries']} | " + " | ".join(cells) + " |")
    return lines


def section(title: str, intro: str, command: str, rows: list[dict], names: list[str]) -> list[str]:
    """A docs section's lines: heading, what was measured, the command, the table."""
    return [f"## {title}", "", intro, "", f"Command: `{command}`", "", *table(rows, names)]


def mrr_gains(rows: list[dict], after: str, before: str) -> list[tuple[str, float]]:
    """(package, MRR@10 of ``after`` minus ``before``) for each package that ran both."""
    return [
        (row["package"], row["results"][after]["mrr@10"] - row["results"][before]["mrr@10"])
        for row in rows
        if after in row["results"] and before in row["results"]
    ]


def listed(gains: list[tuple[str, float]]) -> str:
    """``click +0.099, tqdm +0.101``: the gains as the docs print them."""
    return ", ".join(f"{package} {gain:+.3f}" for package, gain in gains)


def to_markdown(rows: list[dict], command: str, names: list[str]) -> str:
    intro = (
        "Queries: the first sentence of each documented function's docstring; target: that "
        "function, in sources indexed with every docstring removed. A chunk is relevant when "
        "it overlaps the function's span (decorators to last line). Chunks of 512 cl100k "
        f"tokens; recall@{BUDGET}t: the function is in the {BUDGET}-token selection "
        "`Index.pack` makes of the top 100 (skip packer, markdown framing). "
        "Tokens = the `tokens` chunker; code = the `code` chunker (tree-sitter); "
        "identifiers = identifier parts indexed next to whole identifiers. "
        f"Target: `{TARGET_SETTING}` >= `{BASELINE}` + {TARGET_GAIN} MRR@10 on every package."
    )
    lines = section("Code retrieval (CodeSearchNet-style)", intro, command, rows, names)
    gains = mrr_gains(rows, TARGET_SETTING, BASELINE)
    if gains:
        met = "met" if min(g for _, g in gains) >= TARGET_GAIN else "not met"
        lines += [
            "",
            f"MRR@10 gain of `{TARGET_SETTING}` over `{BASELINE}`: {listed(gains)} "
            f"(target +{TARGET_GAIN} on every package: {met}).",
        ]
    return "\n".join(lines)


def windows_markdown(rows: list[dict], command: str, names: list[str]) -> str:
    """The ``--windows`` table: keyword, dense and hybrid, truncated against windowed."""
    intro = (
        "The collection, queries and judgments of the section above (code chunker, identifier "
        "parts, 512-token chunks). minilm reads 256 word pieces; `truncate` embeds a chunk's "
        "first 256, `windows` the whole chunk as word-piece windows, mean-pooled (`index "
        "--embed-long windows`; the default, `auto`, chooses windows for an index whose chunks "
        "are mostly code, as these are). Hybrid: plain RRF (untuned)."
    )
    lines = section("Code retrieval: embedding long chunks whole", intro, command, rows, names)
    for mode in ("dense", "hybrid"):
        before, after = f"{mode}, truncate", f"{mode}, windows"
        gains = mrr_gains(rows, after, before)
        if gains:
            lines += [
                "",
                f"MRR@10 of {mode}, windows over truncate: {listed(gains)} "
                f"(higher on {sum(g > 0 for _, g in gains)} of {len(gains)} packages).",
            ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", default=",".join(PACKAGES))
    parser.add_argument("--no-hybrid", action="store_true", help="skip the minilm setting")
    parser.add_argument("--windows", action="store_true", help="long chunks: truncate vs windows")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    chosen = WINDOW_SETTINGS if args.windows else SETTINGS
    settings = {n: s for n, s in chosen.items() if not (args.no_hybrid and s[2] != "bm25")}
    command = "python bench/code_retrieval.py" + "".join(
        f" {a}" for a in sys.argv[1:] if a != "--write-docs"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="ctxselect-code-") as tmp:
        for package in args.packages.split(","):
            rows.append(run_package(package, Path(tmp), settings))
    if args.windows:
        body = windows_markdown(rows, command, list(settings))
        print(body)
        if args.write_docs:
            replace_section(DOCS, WINDOWS_START, WINDOWS_END, body)
        return
    body = to_markdown(rows, command, list(settings))
    print(body)
    if args.write_docs:
        replace_section(DOCS, START, END, body)


if __name__ == "__main__":
    main()

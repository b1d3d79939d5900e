"""The mode table: a mode added in one place runs through every interface, and no mode
name is a string special case outside its own module and the table."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import sys
from pathlib import Path

import anyio
import numpy as np
import pytest
from click.testing import CliRunner
from mcp import Client

from ctxselect import api
from ctxselect.api import evaluate
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.interfaces.cli import commands  # noqa: F401 (registers the commands)
from ctxselect.interfaces.cli import experiments as cli_experiments  # noqa: F401
from ctxselect.interfaces.cli.main import cli
from ctxselect.interfaces.mcp_server import build_server
from ctxselect.retrieve.analyze import TfidfAnalyzer
from ctxselect.retrieve.modes import (
    MODES,
    ModeSpec,
    embedding_modes,
    keyword_modes,
    keyword_spec,
    retriever_for,
)
from ctxselect.retrieve.tfidf import TfidfSumRetriever

SRC = Path(__file__).resolve().parents[2] / "src" / "ctxselect"

# -- the toy mode: this class and TOY below are all it takes -----------------------------


class CountRetriever(TfidfSumRetriever):
    """Toy mode: sum over the query's distinct words of tf x idf, no length normalisation."""

    mode = "toy"

    def _compute_weights(self, postings):
        return postings.tfs * self._idf_of_postings(postings)

    def live_weights(self, tfs, dl, idf, avgdl):
        return (tfs * idf).astype(np.float32)

    def _note(self, row):
        return "toy: tf x idf summed over the query's distinct words"


TOY = keyword_spec("toy", CountRetriever, "tf x idf summed, no length normalisation")


@pytest.fixture
def toy():
    MODES.add(TOY)
    yield TOY
    MODES.remove(TOY.name)


class PairRRF:
    """Toy fusion: reciprocal-rank fusion (k = 60) of its parts' top 50."""

    mode = "pairrrf"

    def __init__(self, parts):
        self.parts = parts

    def search(self, query, k=10, *, mask=None):
        scores, hits = {}, {}
        for part in self.parts:
            for hit in part.search(query, 50, mask=mask):
                scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1 / (60 + hit.rank)
                hits.setdefault(hit.chunk_id, hit)
        best = sorted(scores, key=lambda c: (-scores[c], c))[:k]
        return [
            dataclasses.replace(hits[c], rank=r, score=scores[c]) for r, c in enumerate(best, 1)
        ]

    def search_many(self, queries, k=10, *, mask=None):
        return {qid: self.search(q, k, mask=mask) for qid, q in queries.items()}

    def explain(self, query, chunk_id):
        return self.parts[0].explain(query, chunk_id)

    def arrays(self):
        return {}


PAIR = ModeSpec(
    "pairrrf",
    "bm25 and toy fused by reciprocal rank",
    PairRRF,
    fuses=("bm25", "toy"),
    combine=lambda parts, _context: PairRRF([parts["bm25"], parts["toy"]]),
)


# -- a corpus on which the toy and bm25 disagree -------------------------------------------

DOCS = {
    "brief.md": "Widget repair takes a screwdriver.",
    "manual.md": "The widget manual. "
    + "Widget widget widget parts and the widget frame. " * 3
    + " ".join(f"filler{i}" for i in range(120)),
    "garden.md": "Roses need water and sun in the garden.",
    "kitchen.md": "Bread needs flour, water and an oven.",
}
QUERIES = {"q1": "widget repair", "q2": "water garden"}


def expected_scores(query: str) -> dict[str, float]:
    """The toy's score of each document (one chunk each), computed from the texts alone."""
    words = {d: TfidfAnalyzer().words(t) for d, t in DOCS.items()}
    out = {}
    for doc, terms in words.items():
        score = 0.0
        for word in dict.fromkeys(TfidfAnalyzer().words(query)):
            df = sum(word in w for w in words.values())
            if df:
                score += terms.count(word) * math.log(len(DOCS) / df)
        out[doc] = score
    return out


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text + "\n", encoding="utf-8")
    return root


def labels(tmp_path, relevant: dict[str, str]) -> tuple[Path, Path]:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t{d}\t1\n" for q, d in relevant.items()))
    return queries, qrels


# -- the table --------------------------------------------------------------------------


def test_the_toy_is_listed_while_registered_and_gone_after(toy) -> None:
    assert "toy" in api.names("mode") and "toy" in keyword_modes()
    assert "toy" not in embedding_modes() and MODES.get("toy") is toy
    MODES.remove("toy")
    assert "toy" not in api.names("mode")
    with pytest.raises(UnknownNameError, match="choose one of bm25, dense, hybrid"):
        MODES.get("toy")
    MODES.add(toy)  # the fixture removes it again


def test_the_table_checks_what_is_added_and_removed(toy) -> None:
    with pytest.raises(ConfigError, match="already registered"):
        MODES.add(MODES.get("bm25"))
    with pytest.raises(ConfigError, match="whose mode is 'toy'"):
        MODES.add(keyword_spec("other", CountRetriever, "misnamed"))
    with pytest.raises(ConfigError, match="not registered"):
        MODES.add(ModeSpec("fused", "", object, fuses=("nope",), combine=lambda p, c: p["nope"]))
    with pytest.raises(ConfigError, match="dense, which needs an embedder"):
        MODES.add(ModeSpec("fused", "", object, fuses=("dense",), combine=lambda p, c: p["dense"]))
    with pytest.raises(ConfigError, match="either fuses and combine"):
        MODES.add(ModeSpec("nothing", "", object))
    with pytest.raises(ConfigError, match="fused by hybrid"):
        MODES.remove("dense")

    class Unfiltered(PairRRF):  # ranks every row whatever the filter: refused
        mode = "unfiltered"

        def search_many(self, queries, k=10):
            return {qid: self.search(q, k) for qid, q in queries.items()}

    with pytest.raises(ConfigError, match=r"Unfiltered.search_many take no mask keyword"):
        MODES.add(dataclasses.replace(PAIR, name="unfiltered", retriever=Unfiltered))
    assert not {"fused", "nothing", "unfiltered"} & set(MODES.names()) and "dense" in MODES


def test_specs_say_what_callers_used_to_ask_by_name() -> None:
    needy = {s.name for s in MODES if s.needs_embedder}
    assert needy == set(embedding_modes()) and set(keyword_modes()) == set(MODES.names()) - needy
    for spec in MODES:
        assert spec.retriever.mode == spec.name and spec.summary
        assert all(part in MODES for part in spec.fuses)
        assert (spec.load is None) == bool(spec.fuses)


# -- the toy through search, select, eval and MCP ------------------------------------------


def test_search_and_select_rank_with_the_toy(toy, corpus, tmp_path) -> None:
    folder = str(tmp_path / "ix")
    api.index_paths([corpus], folder)
    with api.open_index(folder) as idx:
        assert "toy" in idx.modes() and "toy" in idx.info().modes
        for query in QUERIES.values():
            want = expected_scores(query)
            hits = idx.search(query, 10, mode="toy")
            assert [h.doc_id for h in hits] == sorted(
                (d for d in want if want[d] > 0), key=lambda d: (-want[d], d)
            )
            assert [h.score for h in hits] == pytest.approx([want[h.doc_id] for h in hits])
            assert hits == retriever_for(list(idx.store.iter_chunks()), "toy").search(query, 10)
            explanation = idx.explain(query, hits[0].chunk_id, mode="toy")
            assert explanation.mode == "toy" and explanation.score == pytest.approx(hits[0].score)
            selection = idx.select(query, 400, mode="toy")
            chosen = [c for piece in selection.chunks for c in piece.chunk_ids]
            assert 0 < selection.tokens_used <= 400 and hits[0].chunk_id in chosen
            assert set(chosen) <= {h.chunk_id for h in hits}
        keyword = [h.doc_id for h in idx.search("widget repair", 10, mode="bm25")]
    toy_first = max(expected_scores("widget repair").items(), key=lambda kv: kv[1])[0]
    assert keyword[0] != toy_first  # the fixture is one where the modes disagree


def test_an_update_keeps_the_toy_equal_to_a_rebuild(toy, corpus, tmp_path) -> None:
    folder = str(tmp_path / "ix")
    api.index_paths([corpus], folder)
    (corpus / "extra.md").write_text("A widget on the garden table.\n", encoding="utf-8")
    api.index_paths([corpus], folder, compact_fraction=1.0)  # stays a delta segment
    with api.open_index(folder) as idx:
        assert idx.info().delta_segments >= 1
        rebuilt = retriever_for(list(idx.store.iter_chunks()), "toy")
        for query in QUERIES.values():
            assert idx.search(query, 10, mode="toy") == rebuilt.search(query, 10)


def test_a_fusion_of_stored_modes_needs_no_storage_of_its_own(toy, corpus, tmp_path) -> None:
    folder = str(tmp_path / "ix")
    api.index_paths([corpus], folder)
    MODES.add(PAIR)
    try:
        with pytest.raises(ConfigError, match="fused by pairrrf"):
            MODES.remove("toy")
        with api.open_index(folder) as idx:
            assert "pairrrf" in idx.modes() and "pairrrf" not in idx.manifest["modes"]
            in_memory = retriever_for(list(idx.store.iter_chunks()), "pairrrf")
            for query in QUERIES.values():
                fused = idx.search(query, 10, mode="pairrrf")
                sides = [idx.search(query, 50, mode=m) for m in ("bm25", "toy")]
                want = {}
                for hits in sides:
                    for hit in hits:
                        want[hit.chunk_id] = want.get(hit.chunk_id, 0.0) + 1 / (60 + hit.rank)
                assert [h.chunk_id for h in fused] == sorted(want, key=lambda c: (-want[c], c))
                assert [h.score for h in fused] == pytest.approx([want[h.chunk_id] for h in fused])
                assert in_memory.search(query, 10) == fused
    finally:
        MODES.remove("pairrrf")


def _ndcg_of_first(ranking: list[str], relevant: str) -> float:
    return 1.0 / math.log2(ranking.index(relevant) + 2) if relevant in ranking else 0.0


def test_eval_scores_the_toy_ranking_in_python_and_on_the_cli(toy, corpus, tmp_path) -> None:
    tops = {
        q: max(expected_scores(t).items(), key=lambda kv: (kv[1], kv[0]))[0]
        for q, t in QUERIES.items()
    }
    queries, qrels = labels(tmp_path, tops)
    index = str(tmp_path / "eval-ix")
    result = evaluate.evaluate_corpus(
        corpus, queries, qrels, mode="toy", index=index, metrics=("ndcg@10",)
    )
    keyword = evaluate.evaluate_corpus(
        corpus, queries, qrels, mode="bm25", index=index, metrics=("ndcg@10",)
    )
    with api.open_index(index) as idx:
        runs = {m: idx.search_many(QUERIES, 10, mode=m) for m in ("toy", "bm25")}
    want = {
        m: np.mean([_ndcg_of_first([h.doc_id for h in runs[m][q]], tops[q]) for q in QUERIES])
        for m in runs
    }
    assert result.mode == "toy" and result.metrics["ndcg@10"] == pytest.approx(want["toy"])
    assert keyword.metrics["ndcg@10"] == pytest.approx(want["bm25"])
    assert want["bm25"] < want["toy"]  # so the figure is the toy's, not bm25's
    args = ["eval", "--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels)]
    out = CliRunner().invoke(
        cli, [*args, "--index", index, "--mode", "toy", "--metrics", "ndcg@10", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["mode"] == "toy" and data["metrics"]["ndcg@10"] == pytest.approx(want["toy"])


def test_the_mcp_search_tool_ranks_with_the_toy(toy, corpus, tmp_path) -> None:
    folder = str(tmp_path / "ix")
    api.index_paths([corpus], folder)

    async def scenario(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        found = await client.call_tool("search", {"query": "widget repair", "k": 3, "mode": "toy"})
        return tools["search"], found

    tool, found = anyio.run(_with_client, build_server(api.open_index(folder)), scenario)
    assert "toy" in json.dumps(tool.input_schema["properties"]["mode"])
    assert not found.is_error, found.content[0].text
    with api.open_index(folder) as idx:
        want = idx.search("widget repair", 3, mode="toy")
    data = found.structured_content
    assert data["mode"] == "toy"
    assert [h["chunk_id"] for h in data["hits"]] == [h.chunk_id for h in want]


async def _with_client(server, scenario):
    async with Client(server) as client:
        return await scenario(client)


# -- no mode name is a special case outside its module and the table ---------------------

CONFIG = SRC / "config.py"  # defaults (DEFAULT_MODE, LAB_MODE) and the BM25 settings key
PENDING: dict[Path, str] = {}
"""Modules allowed to name modes while they move to the table (none left)."""

SERVED: dict[Path, set[str]] = {SRC / "stores" / "milvus": {"bm25", "dense", "hybrid"}}
"""Stores that rank modes on their own server (``ServingStore``): their modules are those
modes' server-side implementations (Milvus's BM25 function, its vector search), so they
may name the modes they serve, and no other."""


def _served(path: Path) -> set[str]:
    return next((names for folder, names in SERVED.items() if folder in path.parents), set())


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef))]
    out = set()
    for node in nodes:
        body = getattr(node, "body", [])
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
    return out


def _extras(tree: ast.AST) -> set[int]:
    """Values of ``extra=``: names of pip extras (``ctxselect[dense]``), not modes."""
    return {
        id(k.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        for k in n.keywords
        if k.arg == "extra"
    }


def mode_strings(path: Path, names: set[str], root: Path = SRC) -> list[str]:
    """Every string literal of ``path`` that is a mode name (docstrings and extras left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree) | _extras(tree)
    return [
        f"{path.relative_to(root)}:{n.lineno}: {n.value!r}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value in names and id(n) not in skip
    ]


def test_mode_names_appear_only_in_their_module_and_the_table() -> None:
    own: dict[Path, set[str]] = {SRC / "retrieve" / "modes.py": set(MODES.names()), CONFIG: set()}
    for spec in MODES:
        module = Path(sys.modules[spec.retriever.__module__].__file__ or "")
        own.setdefault(module, set()).add(spec.name)
    own[CONFIG] = set(MODES.names())
    offenders = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path not in PENDING
        for hit in mode_strings(path, set(MODES.names()) - own.get(path, set()) - _served(path))
    ]
    assert offenders == []


def test_the_scan_finds_a_special_case(tmp_path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        '"""Doc: "dense" is fine here."""\n'
        'if mode == "hybrid" or "dense" in modes:\n'
        '    require("x", extra="dense")\n',
        encoding="utf-8",
    )
    found = mode_strings(path, {"dense", "hybrid"}, root=tmp_path)
    assert sorted(found) == ["probe.py:2: 'dense'", "probe.py:2: 'hybrid'"]

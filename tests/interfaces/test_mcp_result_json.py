"""The JSON of session results, pinned byte for byte: keys in their documented order.

MCP clients receive ``search``, ``get_chunk`` and ``get_document`` results as this JSON,
and ``result_tokens`` counts it, so a refactor of the result types must not move a key.
"""

from __future__ import annotations

import dataclasses
import json

from ctxselect import agent
from ctxselect.interfaces.mcp_server import output_model, to_text
from ctxselect.tool_results import (
    ContextPiece,
    ContextReference,
    ContextResult,
    Passage,
    SearchResult,
)
from ctxselect.types import DroppedChunk, Hit

REF = ContextReference("a#1", "a", 0, 10, 1, 2, 3, 1, 12, 40, "[a#1: sent in call 1]")
HIT = Hit(1, "b#0", "b", 1.25, 0, 5, 3, "héllo", "H")
REF_JSON = {
    "chunk_id": "a#1", "doc_id": "a", "start": 0, "end": 10, "line_start": 1, "line_end": 2,
    "rank": 3, "call": 1, "tokens": 12, "tokens_saved": 40, "text": "[a#1: sent in call 1]",
}  # fmt: skip
HIT_JSON = {
    "rank": 1, "chunk_id": "b#0", "doc_id": "b", "score": 1.25, "start": 0, "end": 5,
    "n_tokens": 3, "text": "héllo", "header": "H", "p_relevant": None,
}  # fmt: skip


def _search() -> tuple[SearchResult, dict[str, object]]:
    result = SearchResult("q é", "bm25", 5, (HIT,), (REF,), 55, 2, 400, 200, 20000, "a note")
    wire = {
        "query": "q é", "mode": "bm25", "k": 5, "hits": [HIT_JSON], "references": [REF_JSON],
        "tokens_used": 55, "call": 2, "session_tokens": 400, "result_tokens": 200,
        "max_result_tokens": 20000, "note": "a note",
    }  # fmt: skip
    return result, wire


def test_search_result_json_is_pinned() -> None:
    result, wire = _search()
    assert agent.limits.to_json(result) == json.dumps(wire, indent=2, ensure_ascii=False)
    assert to_text(result) == json.dumps(wire, indent=2, ensure_ascii=False)
    model = output_model(SearchResult)
    assert list(model.model_json_schema()["properties"]) == list(wire)
    dumped = model.model_validate(result).model_dump_json()
    assert dumped == json.dumps(wire, ensure_ascii=False, separators=(",", ":"))


def test_passage_json_is_pinned() -> None:
    passage = Passage("d", 0, 4, 1, 1, 9, "H", ("d#0",), 2, False, 4, "text", 3, 90, 30, 20000)
    wire = {
        "doc_id": "d", "start": 0, "end": 4, "line_start": 1, "line_end": 1, "doc_chars": 9,
        "header": "H", "chunk_ids": ["d#0"], "tokens": 2, "truncated": False,
        "next_start": 4, "text": "text", "call": 3, "session_tokens": 90,
        "result_tokens": 30, "max_result_tokens": 20000, "note": "",
    }  # fmt: skip
    assert to_text(passage) == json.dumps(wire, indent=2, ensure_ascii=False)
    assert list(output_model(Passage).model_json_schema()["properties"]) == list(wire)


def test_context_result_fields_and_wire_are_pinned() -> None:
    piece = ContextPiece(("c#0", "c#1"), "c", 0, 9, 1, 3, "Hdr", 0.5, 30, "text")
    result = ContextResult(
        query="q", mode="bm25", detail="snippets", pieces=(piece,), references=(REF,),
        dropped=(DroppedChunk("d#0", "d", 9, "why"),), dropped_total=1, tokens_used=42,
        budget=500, tokens_saved=28, call=3, session_tokens=900, result_tokens=300,
        max_result_tokens=20000, note="n", stop="budget full: 500 of 500",
    )  # fmt: skip
    assert list(dataclasses.asdict(result)) == [
        "query", "mode", "detail", "pieces", "references", "dropped", "dropped_total",
        "tokens_used", "budget", "tokens_saved", "call", "session_tokens", "result_tokens",
        "max_result_tokens", "note", "stop",
    ]  # fmt: skip
    meta = {
        "pieces": [{"chunk_ids": ["c#0", "c#1"], "lines": [1, 3], "tokens": 30}],
        "references": 1, "tokens_used": 42, "tokens_saved": 28, "dropped_total": 1,
        "call": 3, "result_tokens": 300, "session_tokens": 900, "stop": "budget full",
    }  # fmt: skip
    compact = json.dumps(meta, separators=(",", ":"))
    assert agent.context_wire(result) == agent.context_text(result) + compact
    assert to_text(result) == agent.context_wire(result)

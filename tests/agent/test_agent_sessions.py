"""Session-aware selection: references instead of repeats, the cap, spans, safe paths."""

from __future__ import annotations

import os
import re

import pytest

from _support.sessions_corpus import CHUNK, FIRST, SECOND, build_demo
from ctxselect import agent, api
from ctxselect.agent import Sessions, context_text, context_wire, limits
from ctxselect.agent.results import structured
from ctxselect.api import generation
from ctxselect.errors import ConfigError, IndexCorruptError, IndexNotFoundError, NotFoundError


def _sent_ids(result) -> set[str]:
    return {c for piece in result.pieces for c in piece.chunk_ids}


def test_second_overlapping_selection_sends_references_and_new_material(service):
    first = service.select("s", FIRST, 300, stop="none")
    second = service.select("s", SECOND, 300, stop="none")
    assert first.references == () and first.tokens_saved == 0
    referenced = {r.chunk_id for r in second.references}
    assert referenced and referenced <= _sent_ids(first)
    assert not _sent_ids(second) & _sent_ids(first)  # nothing is sent twice
    assert second.tokens_saved == sum(r.tokens_saved for r in second.references) > 0
    assert second.tokens_used <= second.budget
    assert second.tokens_used == sum(p.tokens for p in second.pieces) + sum(
        r.tokens for r in second.references
    )
    ref = second.references[0]
    assert ref.text == (
        f"already provided: chunk {ref.chunk_id} lines {ref.line_start}-{ref.line_end} in call 1"
    )
    assert ref.chunk_id.startswith(f"{ref.doc_id}#")  # the id names the document
    assert (first.call, second.call) == (1, 2)


def test_saved_budget_goes_to_new_material(service):
    first = service.select("s", FIRST, 300, stop="none")
    second = service.select("s", SECOND, 300, stop="none")
    plain = service.select("other", SECOND, 300, stop="none")
    extra = _sent_ids(second) - _sent_ids(plain)
    assert extra  # next-best chunks the plain selection had no room for
    assert not extra & _sent_ids(first)


def test_refresh_sends_everything_again(service):
    first = service.select("s", FIRST, 300)
    again = service.select("s", FIRST, 300, refresh=True)
    assert again.references == () and _sent_ids(again) == _sent_ids(first)
    assert service.select("s", FIRST, 300).references  # and records it anew


def test_ids_detail_sends_no_text_and_records_nothing(service):
    plan = service.select("s", FIRST, 300, detail="ids")
    assert plan.pieces and all(p.text == "" for p in plan.pieces)
    assert all(p.tokens > 0 for p in plan.pieces) and plan.tokens_used <= 300
    assert service.select("s", FIRST, 300).references == ()


def test_full_detail_widens_to_sections_within_the_budget(service):
    snippets = service.select(None, "install agent proxy", 300)
    full = service.select(None, "install agent proxy", 300, detail="full")
    assert full.tokens_used <= 300
    assert sum(p.end - p.start for p in full.pieces) >= sum(
        p.end - p.start for p in snippets.pieces
    )
    for piece in full.pieces:
        text = service.index.get_document(piece.doc_id).text
        assert piece.text == text[piece.start : piece.end]


def test_sessions_are_independent_and_none_remembers_nothing(service):
    service.select("a", FIRST, 300)
    assert service.select("b", FIRST, 300).references == ()
    service.select(None, SECOND, 300)
    assert service.select(None, SECOND, 300).references == ()
    assert service.select("a", FIRST, 300).references


def test_result_and_session_tokens_are_exact(service):
    results = [service.select("s", q, 300) for q in (FIRST, SECOND, FIRST)]
    for result in results:
        assert result.result_tokens == service.index.count_tokens(context_wire(result))
    assert results[-1].session_tokens == sum(r.result_tokens for r in results)


def test_text_block_is_the_context_as_select_prints_it(service):
    first = service.select("s", FIRST, 300)
    text = context_text(first)
    rendered = service.index.render(service.index.select(FIRST, 300))
    assert rendered and text.startswith(rendered)
    assert service.index.count_tokens(rendered) == first.tokens_used
    summary = text[len(rendered) :]
    assert summary.count("\n") == 1 and f"{first.tokens_used} of 300 tokens" in summary
    again = service.select("s", FIRST, 300)
    lines = context_text(again).splitlines()
    refs = [line for line in lines if line.startswith("already provided: ")]
    assert refs == [r.text for r in again.references] and refs
    assert context_wire(again).startswith(context_text(again))


def test_a_result_of_many_references_stays_within_its_overhead(tmp_path):
    demo = Sessions.open(build_demo(tmp_path))
    try:
        ask = {"stop": "none", "include": ["07-*", "08-*"]}  # two chapters: all of them fit
        first = demo.select("s", "budget selection stop tokens", 20_000, **ask)
        again = demo.select("s", "budget selection stop tokens", 20_000, **ask)
    finally:
        demo.close()
    assert len(again.references) >= 20 and again.pieces == ()
    assert len(again.references) == len(_sent_ids(first) & {r.chunk_id for r in again.references})
    assert again.result_tokens <= 1.15 * again.tokens_used + 100  # issue 10's bound
    meta = structured(again)
    assert meta["references"] == len(again.references)  # a count: the ids are in the text
    for ref in again.references:
        assert ref.tokens <= 25 and f"chunk {ref.chunk_id} lines " in ref.text


def test_a_repeat_spends_nothing_past_where_select_stops(service, monkeypatch):
    plain = api.Index.select_ranked

    def stopping(self, hits, budget, **options):  # stops after the best chunk
        return plain(self, hits[:1], budget, **options)

    monkeypatch.setattr(api.Index, "select_ranked", stopping)
    first = service.select("s", FIRST, 1000, stop="none")
    again = service.select("s", FIRST, 1000, stop="none")
    assert _sent_ids(first) == {service.index.search(FIRST, 1)[0].chunk_id}
    assert again.pieces == () and again.references  # no filler with the freed budget
    assert again.tokens_used == sum(r.tokens for r in again.references)


def test_stop_passes_through_and_a_repeat_gets_only_references(service):
    first = service.select("s", FIRST, 1000)  # auto: where select stops
    plain = service.index.select(FIRST, 1000)
    assert first.stop == plain.stop and first.tokens_used == plain.tokens_used < 1000
    again = service.select("s", FIRST, 1000)
    assert again.pieces == () and {r.chunk_id for r in again.references} == _sent_ids(first)
    filled = service.select("t", FIRST, 1000, stop="none")
    assert filled.tokens_used > first.tokens_used
    assert filled.stop == service.index.select(FIRST, 1000, stop="none").stop
    for bad in ("maybe", 1.5):
        with pytest.raises(ConfigError, match="auto, none or a P"):
            service.select("s", FIRST, 300, stop=bad)


def _many_notes(tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(40):
        text = f"# Note {i}\n\n" + f"The agent cache note {i} says the cache holds entries. " * 12
        (root / f"n{i:02d}.md").write_text(text, encoding="utf-8")
    api.index_paths([root], tmp_path / "mix")
    return tmp_path / "mix"


def test_no_result_exceeds_the_cap(tmp_path):
    small = Sessions.open(_many_notes(tmp_path), max_result_tokens=1000)
    result = small.select("s", "agent cache entries", 1000)
    assert result.result_tokens <= 1000 and result.pieces
    assert result.result_tokens == small.index.count_tokens(context_wire(result))
    assert any("result cap" in d.reason for d in result.dropped)
    search = small.search("s", "note", 50)
    assert search.result_tokens <= 1000 and "to stay within 1000 tokens" in search.note
    small.close()


def test_search_hits_become_references_later(service):
    hits = service.search("s", "cache eviction", 3)
    again = service.search("s", "cache eviction", 3)
    assert len(hits.hits) == 3 and again.hits == ()
    assert [r.chunk_id for r in again.references] == [h.chunk_id for h in hits.hits]
    assert again.tokens_used == sum(r.tokens for r in again.references)


def test_get_chunk_and_document_spans(service):
    chunk = service.get_chunk("s", "cache.md#1")
    document = service.index.get_document("cache.md").text
    assert chunk.text == document[chunk.start : chunk.end] and chunk.chunk_ids == ("cache.md#1",)
    assert chunk.line_start == document[: chunk.start].count("\n") + 1
    whole = service.get_document("s", "cache.md")
    assert whole.text == document and not whole.truncated and whole.next_start is None
    assert "already provided in call 2" in service.get_chunk("s", "cache.md#1").note


def test_get_document_pages_long_spans(service, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SPAN_CHARS", 100)
    page = service.get_document("s", "retry.md", 10)
    assert (page.start, page.end, page.truncated, page.next_start) == (10, 110, True, 110)
    assert "continue with start=110" in page.note
    tail = service.get_document("s", "retry.md", 700, 2000)
    assert tail.end == 741 and not tail.truncated and tail.next_start is None


def test_get_document_cut_to_the_cap(tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    (root / "long.md").write_text("word " * 20_000, encoding="utf-8")
    api.index_paths([root], tmp_path / "bix")
    small = Sessions.open(tmp_path / "bix", max_result_tokens=1000)
    page = small.get_document("s", "long.md")
    assert page.truncated and page.result_tokens <= 1000 and page.next_start == page.end
    small.close()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.select("s", "x", 5), "budget 5 is below the minimum of 100 tokens"),
        (lambda s: s.select("s", "x", 30_000), "above the result cap of 20000 tokens"),
        (lambda s: s.select("s", "x" * 2001), "above the limit of 2,000"),
        (lambda s: s.select("s", "   "), "query is empty"),
        (lambda s: s.select("s", "x", detail="all"), "unknown detail 'all'"),
        (lambda s: s.search("s", "x", 0), "k must be between 1 and 50, got 0"),
        (lambda s: s.get_document("s", "../secret.md"), "is refused"),
        (lambda s: s.get_document("s", "/etc/passwd"), "is refused"),
        (lambda s: s.get_document("s", "cache.md", 99_999), "start 99999 is outside"),
        (lambda s: s.get_document("s", "cache.md", 50, 10), "end 10 is before start 50"),
    ],
)
def test_bad_arguments_are_config_errors(service, call, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        call(service)


def test_unknown_ids_are_not_found(service):
    with pytest.raises(NotFoundError, match="no chunk 'nope#1'"):
        service.get_chunk("s", "nope#1")
    with pytest.raises(NotFoundError, match=r"no document 'nope\.md'"):
        service.get_document("s", "nope.md")


def test_a_changed_chunk_is_sent_again_after_index_paths(service, corpus_index):
    corpus, _ = corpus_index
    first = service.select("s", FIRST, 300)
    path = corpus / "cache.md"
    path.write_text(path.read_text().replace("tenth", "quarter"), encoding="utf-8")
    report = service.index_paths()
    assert report.report.updated == 1
    again = service.select("s", FIRST, 300)
    changed = {p.chunk_ids for p in again.pieces}
    assert any("cache.md#1" in ids for ids in changed)  # the edited section comes back
    assert {r.chunk_id for r in again.references} <= _sent_ids(first) - {"cache.md#1"}


def test_add_paths_indexes_a_new_file(service, corpus_index):
    corpus, _ = corpus_index
    (corpus / "notes").mkdir()
    (corpus / "notes" / "quota.md").write_text("# Quota\n\nThe quota resets hourly.\n")
    result = service.add_paths(["notes/quota.md"])
    assert result.doc_ids == ("notes/quota.md",) and result.missing == ()
    assert service.search(None, "quota resets", 1).hits[0].doc_id == "notes/quota.md"


def test_paths_outside_the_roots_are_refused(service, corpus_index, tmp_path):
    corpus, _ = corpus_index
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\npassword\n")
    os.symlink(secret, corpus / "link.md")
    os.symlink(tmp_path, corpus / "up")
    for path, message in [
        ("../secret.md", "'..' may not appear"),
        (str(secret), "is refused: give a path relative"),
        ("link.md", "leads through a symlink to"),
        ("up/secret.md", "leads through a symlink to"),
        ("missing.md", "does not exist"),
    ]:
        with pytest.raises(ConfigError, match=message):
            service.add_paths([path])
    with pytest.raises(ConfigError, match="outside them through symlinks"):
        service.index_paths()
    assert str(corpus / "link.md") in agent.outside_files([str(corpus)])


def test_resolve_inside_accepts_inner_symlinks(corpus_index):
    corpus, _ = corpus_index
    os.symlink(corpus / "cache.md", corpus / "alias.md")
    real = agent.resolve_inside([str(corpus)], "alias.md")
    assert real == os.path.realpath(corpus / "cache.md")


def test_missing_and_damaged_indexes_fail_on_open(tmp_path):
    with pytest.raises(IndexNotFoundError, match="ctxselect index PATH"):
        Sessions.open(tmp_path / "none")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "index.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(IndexCorruptError):
        Sessions.open(tmp_path / "bad")


def test_the_cap_has_a_floor(corpus_index):
    with pytest.raises(ConfigError, match="at least 1000"):
        Sessions.open(corpus_index[1], max_result_tokens=10)


# An outside re-index (``ctxselect index`` in another process) between two tool calls:
# every read sees the new generation (chunk rows, lines, what the session received).


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(generation, "RELOAD_CHECK_SECONDS", 0.0)  # every call looks


def _outside_reindex(corpus, folder) -> None:
    """What ``ctxselect index`` run in another process does: commit a new generation."""
    api.index_paths([corpus], folder, chunk=CHUNK)


def _true_lines(service, doc_id, start, end) -> tuple[int, int]:
    with api.open_index(service.index.path) as fresh:
        text = fresh.get_document(doc_id).text
    return text.count("\n", 0, start) + 1, text.count("\n", 0, max(start, end - 1)) + 1


def test_reads_work_after_an_outside_reindex_removes_a_document(service, corpus_index, fresh):
    corpus, folder = corpus_index
    before = service.get_document("s", "retry.md", 0, 2000)
    assert before.chunk_ids
    (corpus / "cache.md").unlink()
    _outside_reindex(corpus, folder)
    after = service.get_document("s", "retry.md", 0, 2000)
    assert after.chunk_ids == before.chunk_ids
    assert service.select("s", "failed requests retried with backoff", 300).tokens_used > 0
    assert service.grep("s", "backoff", budget=300).references  # it has the document
    assert service.grep(None, "backoff", budget=300).blocks
    assert not any(h.doc_id == "cache.md" for h in service.search("s", "cache eviction").hits)


def test_an_outside_reindex_adding_chunks_records_only_what_was_sent(service, corpus_index, fresh):
    corpus, folder = corpus_index
    service.get_document("s", "retry.md", 0, 2000)
    sections = "".join(
        f"## Part {i}\n\n" + "lorem ipsum dolor words " * 30 + "\n\n" for i in range(6)
    )
    (corpus / "aaa.md").write_text(f"# Aaa\n\n{sections}", encoding="utf-8")
    _outside_reindex(corpus, folder)
    again = service.get_document("s", "retry.md", 0, 2000)
    assert again.chunk_ids and all(c.startswith("retry.md#") for c in again.chunk_ids)
    fresh = service.select("s", "lorem ipsum dolor words", 400, stop="none")
    assert fresh.pieces and fresh.references == ()  # aaa.md was never sent


def _chunk_with(folder, text) -> str:
    with api.open_index(folder) as fresh:
        table = fresh.table
    return next(c for c, t in zip(table.chunk_ids, table.texts, strict=True) if text in t)


def test_lines_follow_an_outside_reindex_that_shifts_a_document(service, corpus_index, fresh):
    corpus, folder = corpus_index
    first = service.get_chunk("s", _chunk_with(folder, "random jitter"))
    assert (first.line_start, first.line_end) == _true_lines(
        service, "retry.md", first.start, first.end
    )
    path = corpus / "retry.md"
    path.write_text(
        path.read_text().replace("# Retries\n", "# Retries\n\n" + "filler\n" * 40), encoding="utf-8"
    )
    _outside_reindex(corpus, folder)
    moved = service.get_chunk("s", _chunk_with(folder, "random jitter"))
    assert moved.start > first.start
    assert (moved.line_start, moved.line_end) == _true_lines(
        service, "retry.md", moved.start, moved.end
    )
    block = service.grep("s", "^## Jitter", context=0).blocks[0]
    assert block.line_start == _true_lines(service, "retry.md", block.start, block.end)[0]

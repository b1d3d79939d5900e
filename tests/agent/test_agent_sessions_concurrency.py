"""A slow ``grep`` scans outside the sessions' lock, safely across an index write.

The scan is made slow deterministically: reading the first document in the grep's thread
waits on an event the test sets once the other call is done. Events order the calls; the
waits' timeouts only keep a regression from hanging the suite.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from _support.sessions_corpus import CHUNK, FIRST, SECOND
from ctxselect import api
from ctxselect.api import generation
from ctxselect.errors import CtxselectError, IndexLockedError

GUARD = 10.0  # seconds: only a regression waits this long


class PausedScan:
    """Make ``index.get_document`` in the thread named ``grep`` stop at its first call
    until :attr:`release` is set; :attr:`reached` says the scan is there."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, index: api.Index) -> None:
        self.reached, self.release = threading.Event(), threading.Event()
        real = index.get_document

        def get_document(doc_id: str):
            if threading.current_thread().name == "grep" and not self.reached.is_set():
                self.reached.set()
                self.release.wait(GUARD)
            return real(doc_id)

        monkeypatch.setattr(index, "get_document", get_document)


def _run(name: str, action: Callable[[], object], order: list[str], out: dict) -> threading.Thread:
    """Run ``action`` in a thread called ``name``; its value (or error) goes to ``out``. The
    grep thread appends its name to ``order`` when done; other actions do it themselves,
    before they release the scan, so the order never depends on thread scheduling."""

    def target() -> None:
        try:
            out[name] = action()
        except BaseException as exc:  # reported by the test, not lost in the thread
            out[name] = exc
        if name == "grep":
            order.append(name)

    thread = threading.Thread(target=target, name=name)
    thread.start()
    return thread


def test_a_slow_grep_does_not_hold_up_another_sessions_calls(service, monkeypatch):
    paused = PausedScan(monkeypatch, service.index)
    order: list[str] = []
    out: dict[str, object] = {}
    grep = _run("grep", lambda: service.grep("a", "cache"), order, out)
    assert paused.reached.wait(GUARD)

    def others() -> object:
        selected = service.select("b", FIRST, 300)
        grepped = service.grep("b", "backoff")
        order.append("other")
        paused.release.set()
        return selected, grepped

    other = _run("other", others, order, out)
    other.join(GUARD)
    paused.release.set()
    grep.join(GUARD)
    assert order == ["other", "grep"], "the other session waited for the slow grep"
    selected, grepped = out["other"]
    assert selected.pieces and grepped.blocks and out["grep"].blocks
    assert selected.call == 1 and grepped.call == 2 and out["grep"].call == 1


def test_a_reindex_during_a_grep_scan_rescans_the_new_index(service, corpus_index, monkeypatch):
    corpus, _ = corpus_index
    old = service.index
    paused = PausedScan(monkeypatch, old)
    order: list[str] = []
    out: dict[str, object] = {}
    grep = _run(
        "grep",
        lambda: service.grep("a", "tenth|quarter", include=["cache.md"], context=20),
        order,
        out,
    )
    assert paused.reached.wait(GUARD)

    def reindex() -> object:
        path = corpus / "cache.md"
        path.write_text(path.read_text().replace("tenth", "quarter"), encoding="utf-8")
        done = service.index_paths()
        order.append("index")
        paused.release.set()
        return done

    writer = _run("index", reindex, order, out)
    writer.join(GUARD)
    paused.release.set()
    grep.join(GUARD)
    assert order == ["index", "grep"], "the re-index waited for the slow grep"
    assert out["index"].report.updated == 1
    result = out["grep"]
    assert not isinstance(result, BaseException), result
    texts = "".join(b.text for b in result.blocks)
    assert "quarter" in texts and "tenth" not in texts  # the new version, not a mix
    with pytest.raises(CtxselectError, match="was closed"):
        old.get_document("cache.md")  # the replaced index closed once the scan let go
    # memory holds what was sent: references only for chunks inside the blocks grep sent
    again = service.select("a", FIRST, 2000, stop="none", include=["cache.md"])
    assert again.references and again.call == 2
    for ref in again.references:
        assert any(b.start <= ref.start and ref.end <= b.end for b in result.blocks), ref


def test_grep_fails_clearly_when_the_index_changes_during_every_scan(
    service, corpus_index, monkeypatch
):
    corpus, folder = corpus_index
    first = service.select("a", FIRST, 300)
    real = service.index.get_document
    commits: list[int] = []

    def get_document(doc_id: str):
        if doc_id == "cache.md":  # each scan reads it first: another process commits then
            path = corpus / "cache.md"
            path.write_text(path.read_text() + f"\nEdit {len(commits)}.\n", encoding="utf-8")
            api.index_paths([corpus], folder)
            commits.append(1)
        return real(doc_id)

    monkeypatch.setattr(service.index, "get_document", get_document)
    with pytest.raises(
        IndexLockedError,
        match=r"grep read the index .* while it changed, twice .*call again once the re-index",
    ):
        service.grep("a", "cache")
    assert len(commits) == 2
    monkeypatch.setattr(service.index, "get_document", real)
    after = service.select("a", FIRST, 300)
    assert after.call == first.call + 1  # the failed call recorded nothing
    assert after.session_tokens == first.session_tokens + after.result_tokens


def test_an_unchanged_index_is_scanned_once(service, monkeypatch):
    reads: list[str] = []
    real = service.index.get_document

    def get_document(doc_id: str):
        reads.append(doc_id)
        return real(doc_id)

    monkeypatch.setattr(service.index, "get_document", get_document)
    result = service.grep("a", "cache")
    assert result.blocks and reads.count("cache.md") == 1


# Another process commits a re-index in the middle of a call (``ctxselect index`` or
# ``watch`` beside the server): rows ranked in one generation are looked up in the next.


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(generation, "RELOAD_CHECK_SECONDS", 0.0)  # every read looks


def _commit_after(monkeypatch, index, method: str, corpus, folder, times: int) -> list[int]:
    """After each of the first ``times`` calls of ``index.method``, another process edits
    cache.md (the first time: deletes it) and commits a re-index."""
    real, commits = getattr(index, method), []

    def hooked(*args, **kwargs):
        found = real(*args, **kwargs)
        if len(commits) < times:
            path = corpus / "cache.md"
            if commits:
                path.write_text(f"# Cache\n\nEdit {len(commits)}.\n", encoding="utf-8")
            else:
                path.unlink()
            api.index_paths([corpus], folder, chunk=CHUNK)
            commits.append(1)
        return found

    monkeypatch.setattr(index, method, hooked)
    return commits


@pytest.mark.parametrize("method", ["rank", "search"])
def test_a_call_overlapping_an_outside_commit_answers_from_the_new_generation(
    service, corpus_index, monkeypatch, fresh, method
):
    corpus, folder = corpus_index
    first = service.select("s", SECOND, 300, stop="none")
    assert any(p.doc_id == "cache.md" for p in first.pieces)
    commits = _commit_after(monkeypatch, service.index, method, corpus, folder, 1)
    if method == "rank":
        result = service.select("s", SECOND, 300, stop="none")
        docs = {p.doc_id for p in result.pieces} | {r.doc_id for r in result.references}
    else:
        result = service.search("s", SECOND, 5)
        docs = {h.doc_id for h in result.hits} | {r.doc_id for r in result.references}
    assert commits == [1] and "cache.md" not in docs and docs  # ranked again, no KeyError
    assert result.call == 2 and result.session_tokens == first.result_tokens + (
        result.result_tokens
    )  # the abandoned run left no trace in the session


def test_a_call_fails_clearly_when_every_run_overlaps_a_commit(
    service, corpus_index, monkeypatch, fresh
):
    corpus, folder = corpus_index
    first = service.select("s", SECOND, 300, stop="none")
    commits = _commit_after(monkeypatch, service.index, "rank", corpus, folder, 2)
    with pytest.raises(IndexLockedError, match=r"the call read the index .* while it changed"):
        service.select("s", SECOND, 300, stop="none")
    assert len(commits) == 2
    after = service.search("s", "backoff", 3)
    assert after.call == first.call + 1  # nothing of the failed call was recorded
    assert after.session_tokens == first.result_tokens + after.result_tokens

"""The Milvus writer lease under a rival writer: the races are injected, not timed.

A rival "takes" the lease by upserting its own row over ours, as a writer whose upsert
landed after our read-back does. Every test runs against the session's Milvus Lite
server (``milvus_server`` in ``conftest.py``).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pytest
from store_kinds import milvus_uri

from ctxselect.errors import IndexLockedError, IndexWriteError
from ctxselect.stores.milvus import lease as ml
from ctxselect.stores.milvus.store import MilvusStore


@pytest.fixture
def store(milvus_server: Any, tmp_path: Any) -> Iterator[MilvusStore]:
    """A new, empty Milvus index with one committed generation."""
    found = MilvusStore(milvus_uri(tmp_path, milvus_server), create=True)
    try:
        with found.lock():
            found.commit_settings({"made": True})
        yield found
    finally:
        found.close()


def _rival(store: MilvusStore) -> ml.Lease:
    """A rival writer of the same index whose lease row replaces ours (it is live: the
    row names this process)."""
    rival = ml.Lease(MilvusStore(store.uri))
    rival.store.put_lease(rival.owner, ml.LEASE_SECONDS, ml.holder())
    return rival


def _release_on_pause(monkeypatch: pytest.MonkeyPatch, rival: ml.Lease, commit: bool) -> list:
    """When our writer first pauses for the lease, the rival (optionally) commits one
    generation and releases it."""
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        if not pauses:
            if commit:
                rival.head = rival.store.head()
                rival.store._held[rival.owner] = rival
                rival.store.commit_settings({"by": "rival"})
            rival.store.drop_lease(rival.owner)
            rival.store._held.pop(rival.owner, None)
        pauses.append(seconds)

    monkeypatch.setattr(ml, "_pause", pause, raising=False)  # raising: run it on old code too
    return pauses


def test_a_lease_taken_before_any_row_is_written_is_waited_for_again(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.lock(wait=30) as lease:
        first = store.commit_settings({"step": 1})  # the lease follows our own commits
        rival = _rival(store)
        pauses = _release_on_pause(monkeypatch, rival, commit=False)
        second = store.commit_settings({"step": 2})
        assert pauses, "the writer must have waited for the rival"
        assert second == first + 1 and store.read_manifest()["step"] == 2
        row = store.lease_row()
        assert row is not None and row["key"] == lease.owner
    rival.store.close()
    assert store.lease_row() is None
    assert store.verify()[1] == []


def test_a_rival_that_commits_meanwhile_makes_the_write_stop_before_writing(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = store.head()
    with store.lock(wait=30):
        rival = _rival(store)
        _release_on_pause(monkeypatch, rival, commit=True)
        with pytest.raises(IndexWriteError, match="nothing was written") as err:
            store.commit_settings({"by": "us"})
    rival.store.close()
    assert "\n" not in str(err.value) and "run the command again" in str(err.value)
    assert store.head() == before + 1  # the rival's commit, nothing of ours
    assert store.read_manifest()["by"] == "rival"
    assert store.verify() == (["layout", "manifest", "counts", "leftovers"], [], [])


def test_a_writer_without_wait_still_fails_at_once_in_one_line(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = store.head()
    monkeypatch.setattr(ml, "_pause", lambda seconds: pytest.fail("wait=0 must not wait"))
    with store.lock(wait=0):
        rival = _rival(store)
        with pytest.raises(IndexLockedError, match=r"--wait SECONDS") as err:
            store.commit_settings({"by": "us"})
    assert "\n" not in str(err.value)
    assert store.head() == before
    rival.store.drop_lease(rival.owner)
    rival.store.close()


def test_a_lease_taken_after_rows_were_written_commits_nothing(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, checked = store.head(), store.check_lease
    rivals: list[ml.Lease] = []

    def check(written: bool = True) -> None:
        if written and not rivals:  # the manifest rows are written: the rival lands now
            rivals.append(_rival(store))
        checked(written)

    monkeypatch.setattr(store, "check_lease", check)
    with store.lock(wait=30), pytest.raises(IndexLockedError, match="committed nothing") as err:
        store.commit_settings({"by": "us"})
    assert "\n" not in str(err.value) and "run the command again" in str(err.value)
    assert store.head() == before and "by" not in store.read_manifest()
    rivals[0].store.drop_lease(rivals[0].owner)
    rivals[0].store.close()
    assert store.verify()[2] != []  # our manifest rows were leftovers, now removed


def test_releasing_never_drops_a_rival_row_put_after_our_read(store: MilvusStore) -> None:
    lease = store.lock()
    lease.__enter__()
    stale = store.lease_row()
    rival = _rival(store)
    store.lease_row = lambda: stale  # type: ignore[method-assign]  # read before the rival's
    try:
        lease.__exit__(None, None, None)
    finally:
        del store.lease_row
    row = store.lease_row()
    assert row is not None and row["key"] == rival.owner
    rival.store.drop_lease(rival.owner)
    rival.store.close()


def test_the_settle_wait_follows_the_measured_visibility_delay(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays: collections.deque[float] = collections.deque(maxlen=16)
    monkeypatch.setattr(ml, "_DELAYS", delays)
    assert ml.settle_seconds() == ml.SETTLE_SECONDS
    delays.extend([0.01, 0.1])
    assert ml.settle_seconds() == pytest.approx(ml.SETTLE_FACTOR * 0.1)
    delays.append(60.0)
    assert ml.settle_seconds() == ml.SETTLE_MAX
    delays.clear()
    with store.lock():
        pass
    assert len(delays) == 1 and 0 < delays[0] < ml.SETTLE_MAX  # each take measures one

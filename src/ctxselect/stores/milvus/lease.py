"""The writer lock of a Milvus index: a lease row (owner, expiry), since Milvus has no locks.

Taking it: read the lease row; if it is missing, expired or ours, upsert it with our
owner id and an expiry ``LEASE_SECONDS`` ahead, read it back (the time from the first
read to seeing our row is this client's visibility delay), wait the settle time and
read it once more: whoever's id is there holds it. The settle time adapts to the server:
``SETTLE_FACTOR`` times the longest of this process's recent visibility delays, at
least ``SETTLE_SECONDS`` and at most ``SETTLE_MAX``, so a rival that read the row before
our upsert showed has landed its own upsert before we look. Every commit re-checks the
lease before it writes a row and again just before its commit row, and renews it once
less than half of it is left: a renewal is an upsert, which Milvus makes a delete then
an insert, so a rival reading in between sees no row (a taker that finds none reads
again after the settle time before it takes it). A
writer whose lease was taken before it wrote anything waits for it again, within what
is left of its wait; after it wrote rows it refuses to commit. Releasing deletes the row
only while it names us (one filtered delete, not a read then a delete that would drop
a row a rival put in between).

Limits (docs/14-milvus.md): a rival whose upsert takes longer than the settle time to
show can still share the lease; the commit's checks (the lease, and that the head is
still the generation it started from) then refuse the slower one, whose rows carry the
same generation as the winner's and cannot be told apart from them. A writer stopped for
longer than the lease (a paused VM) can be overtaken. A killed writer's lease is taken
over at once by a writer on the same host (its pid is gone); from another host it blocks
until it expires (at most ``LEASE_SECONDS`` after the killed writer's last commit).
"""

from __future__ import annotations

import collections
import json
import os
import socket
import sys
import time
import uuid
from types import TracebackType
from typing import Any

from ctxselect.errors import IndexLockedError, IndexWriteError, StoreUnreachableError
from ctxselect.stores.milvus.client import reaching, unreachable
from ctxselect.stores.milvus.rows import meta_row

LEASE_SECONDS = 120.0
LOCK_ID = -2
"""The lease row's id in the meta collection."""
SETTLE_SECONDS = 0.02
"""The least settle wait (seconds) between taking the lease and reading it back."""
SETTLE_FACTOR = 4.0
"""The settle wait in multiples of this process's longest recent visibility delay."""
SETTLE_MAX = 2.0
"""The most a settle wait may be (seconds), however slow the server answers."""
_POLL_SECONDS = 0.05
_DELAYS: collections.deque[float] = collections.deque(maxlen=16)
"""This process's recent visibility delays: lease row read -> our upsert seen (seconds)."""
_ABANDONED: set[str] = set()
"""Owners of leases this process let go without deleting their row (the server did not
answer): this process's next writer takes such a lease over at once."""


def holder() -> str:
    """Who takes the lease (JSON: pid, host, command), for ``live`` and messages."""
    command = " ".join(sys.argv)[:100]
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": command})


def describe(row: dict[str, Any] | None) -> str:
    """The holder of a lease row, as a message shows it."""
    if row is None:
        return "another writer taking the lease"
    try:
        who = json.loads(row["info"])
        return f"pid {who['pid']} on {who['host']}: {who['command']}"
    except (ValueError, KeyError, TypeError):
        return str(row.get("info", "unknown"))


def live(row: dict[str, Any] | None) -> bool:
    """True when a lease row holds: not expired, and not of a dead process on this host."""
    if row is None or int(row["num"]) < time.time() * 1000 or row["key"] in _ABANDONED:
        return False
    try:
        who = json.loads(row["info"])
        pid, host = int(who["pid"]), str(who["host"])
    except (ValueError, KeyError, TypeError):
        return True
    if host != socket.gethostname() or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: is the process there?
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def settle_seconds() -> float:
    """How long a taker waits before reading the lease back (see the module)."""
    measured = SETTLE_FACTOR * max(_DELAYS, default=0.0)
    return min(SETTLE_MAX, max(SETTLE_SECONDS, measured))


def _pause(seconds: float) -> None:
    """Sleep between two tries of a busy lease (a seam for tests)."""
    time.sleep(seconds)


class Lease:
    """The writer lease of one store (a context manager).

    Args:
        store: The MilvusStore whose index it guards.
        wait: Seconds to wait for a busy lease, in all (a lease taken over before the
            write wrote anything is waited for again with what is left), before
            IndexLockedError.
    """

    def __init__(self, store: Any, wait: float = 0.0) -> None:
        self.store = store
        self.wait = max(0.0, wait)
        self.owner = uuid.uuid4().hex
        self.waited = 0.0
        self.head: int | None = None
        """The committed generation when the lease was taken (or this writer last
        committed): what the write prepared was read from it."""

    def _try(self) -> tuple[bool, dict[str, Any] | None]:
        """Take the lease: (held, the row read last)."""
        started = time.monotonic()
        row = self.store.lease_row()
        if row is None:  # or a holder's renewal in flight: Milvus upserts by delete + insert
            time.sleep(settle_seconds())
            started, row = time.monotonic(), self.store.lease_row()
        if row is not None and row["key"] != self.owner and live(row):
            return False, row
        self.store.put_lease(self.owner, LEASE_SECONDS, holder())
        row = self.store.lease_row()
        if row is None or row["key"] != self.owner:
            return False, row
        _DELAYS.append(time.monotonic() - started)
        time.sleep(settle_seconds())
        row = self.store.lease_row()
        return row is not None and row["key"] == self.owner, row

    def take(self) -> None:
        """Take the lease, waiting while it is busy until the wait is spent.

        Raises:
            IndexLockedError: Another writer still holds it when the wait is spent.
        """
        while True:
            with reaching(self.store.address):
                held, row = self._try()
                if held:
                    self.head = self.store.head()
                    self.store._held[self.owner] = self
                    return
            if self.waited >= self.wait:
                raise IndexLockedError(
                    f"index {self.store.uri} is being written by another process "
                    f"({describe(row)}): wait for it (--wait SECONDS) or run the command "
                    f"again later; a killed writer's lease expires at most "
                    f"{LEASE_SECONDS:.0f} s after its last commit"
                )
            pause = min(_POLL_SECONDS, self.wait - self.waited)
            _pause(pause)
            self.waited += pause

    def regain(self) -> None:
        """Take the lease again after another writer took it before this write wrote
        anything (waiting with what is left of the wait).

        Raises:
            IndexLockedError: The other writer still holds it when the wait is spent.
            IndexWriteError: The other writer committed meanwhile, so what this write
                prepared may no longer fit; nothing was written.
        """
        self.store._held.pop(self.owner, None)
        prepared = self.head
        self.take()
        if self.head != prepared:
            raise IndexWriteError(
                f"index {self.store.uri} was committed to by another writer (generation "
                f"{prepared} -> {self.head}) that took this write's lease before it wrote "
                f"anything, so what it prepared may no longer fit; nothing was written: "
                f"run the command again"
            )

    def __enter__(self) -> Lease:
        self.take()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.store._held.pop(self.owner, None)
        if self.store._client is None:
            return
        from pymilvus.exceptions import MilvusException

        if isinstance(exc, StoreUnreachableError):  # asking again would wait again
            _ABANDONED.add(self.owner)
            return
        try:
            self.store.drop_lease(self.owner)
        except MilvusException as gone:
            _ABANDONED.add(self.owner)
            if exc is not None:  # the write's own error says what failed: keep it
                return  # the row stays until it expires, or at once for this host's writers
            raise unreachable(self.store.address, gone) from gone


class LeaseRows:
    """The lease row of a Milvus index (mixed into MilvusStore through MilvusWrites)."""

    uri: str
    address: Any
    _client: Any
    _held: dict[str, Lease]
    """The leases this store holds, by owner."""

    def _put_meta(self, rows: Any, upsert: bool = False) -> None:
        raise NotImplementedError  # provided by MilvusWrites

    def check_lease(self, written: bool = True) -> None:
        """Renew our lease; refuse to write while another writer holds one.

        Args:
            written: Whether this commit wrote rows already. Before it has, a lease of
                ours that another writer took (or that is gone) is waited for again.

        Raises:
            IndexLockedError: Another writer holds the lease (and, when this store took
                one before writing, it was not given back within the wait).
            IndexWriteError: Our lease was taken and the taker committed meanwhile.
        """
        row = self.lease_row()
        if row is not None and row["key"] in self._held:
            if int(row["num"]) - time.time() * 1000 < LEASE_SECONDS * 500:  # half is left
                self.put_lease(row["key"], LEASE_SECONDS, row["info"])
            return
        if self._held and not written:
            next(iter(self._held.values())).regain()
            return
        if self._held:
            raise IndexLockedError(
                f"index {self.uri}: this write's lease was taken by another writer "
                f"({describe(row)}) after it wrote its rows, so it committed nothing (the "
                f"last committed generation is kept): run the command again"
            )
        if row is not None and live(row):
            raise IndexLockedError(
                f"index {self.uri} is being written by another process ({describe(row)}): "
                f"wait for it (--wait SECONDS) or run the command again later"
            )

    def lease_row(self) -> dict[str, Any] | None:
        """The lease row, if any."""
        found = self._client.query(
            self.address.meta, filter=f"id == {LOCK_ID}", output_fields=["key", "num", "info"]
        )
        return dict(found[0]) if found else None

    def put_lease(self, owner: str, seconds: float, holder: str) -> None:
        """Write the lease row: ``owner`` holds it for ``seconds`` from now."""
        expires = int(time.time() * 1000) + int(seconds * 1000)
        row = meta_row(LOCK_ID, "lock", key=owner, num=expires, info=holder)
        self._put_meta([row], upsert=True)

    def drop_lease(self, owner: str) -> None:
        """Delete the lease row if ``owner`` holds it (one filtered delete: reading it
        first would drop a row another writer put in between)."""
        self._client.delete(self.address.meta, filter=f'id == {LOCK_ID} and key == "{owner}"')

"""The writer lock of a Milvus index: a lease row (owner, expiry), since Milvus has no locks.

Taking it: read the lease row; if it is missing, expired or ours, upsert it with our
owner id and an expiry ``LEASE_SECONDS`` ahead, wait ``SETTLE_SECONDS`` and read it back:
whoever's id is there holds it. Every commit re-checks the lease just before its commit
row (and renews it), and refuses while another writer's unexpired lease stands.

Limits (docs/14-milvus.md): two writers that upsert within the settle time may both
read their own id back before the later write lands; the commit's check that the head
is still the generation it started from then refuses the slower one. A writer stopped
for longer than the lease (a paused VM) can be overtaken. A killed writer's lease is
taken over at once by a writer on the same host (its pid is gone); from another host it
blocks until it expires (``LEASE_SECONDS`` after the killed writer's last commit).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from types import TracebackType
from typing import Any

from ctxselect.errors import IndexLockedError, StoreUnreachableError
from ctxselect.stores.milvus.client import reaching, unreachable
from ctxselect.stores.milvus.rows import meta_row

LEASE_SECONDS = 120.0
LOCK_ID = -2
"""The lease row's id in the meta collection."""
SETTLE_SECONDS = 0.02
_POLL_SECONDS = 0.05
_ABANDONED: set[str] = set()
"""Owners of leases this process let go without deleting their row (the server did not
answer): this process's next writer takes such a lease over at once."""


def holder() -> str:
    """Who takes the lease (JSON: pid, host, command), for ``live`` and messages."""
    command = " ".join(sys.argv)[:100]
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": command})


def describe(row: dict[str, Any]) -> str:
    """The holder of a lease row, as a message shows it."""
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


class Lease:
    """The writer lease of one store (a context manager).

    Args:
        store: The MilvusStore whose index it guards.
        wait: Seconds to wait for a busy lease before IndexLockedError.
    """

    def __init__(self, store: Any, wait: float = 0.0) -> None:
        self.store = store
        self.wait = wait
        self.owner = uuid.uuid4().hex

    def _try(self) -> dict[str, Any] | None:
        """Take the lease; return the other holder's row if it is busy."""
        row = self.store.lease_row()
        if row is not None and row["key"] != self.owner and live(row):
            return row
        self.store.put_lease(self.owner, LEASE_SECONDS, holder())
        time.sleep(SETTLE_SECONDS)
        row = self.store.lease_row()
        return None if row is not None and row["key"] == self.owner else row

    def __enter__(self) -> Lease:
        deadline = time.monotonic() + max(0.0, self.wait)
        while True:
            with reaching(self.store.address):
                busy = self._try()
            if busy is None:
                self.store._held.add(self.owner)
                return self
            if time.monotonic() >= deadline:
                raise IndexLockedError(
                    f"index {self.store.uri} is being written by another process "
                    f"({describe(busy)}): wait for it (--wait SECONDS) or run the command "
                    f"again later; a killed writer's lease expires {LEASE_SECONDS:.0f} s "
                    f"after its last commit"
                )
            time.sleep(_POLL_SECONDS)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.store._held.discard(self.owner)
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
    _held: set[str]

    def _put_meta(self, rows: Any, upsert: bool = False) -> None:
        raise NotImplementedError  # provided by MilvusWrites

    def check_lease(self) -> None:
        """Refuse to write while another writer holds an unexpired lease; renew ours."""
        row = self.lease_row()
        if row is None or not live(row):
            return
        if row["key"] not in self._held:
            raise IndexLockedError(
                f"index {self.uri} is being written by another process ({describe(row)}): "
                f"wait for it (--wait SECONDS) or run the command again later"
            )
        self.put_lease(row["key"], LEASE_SECONDS, row["info"])

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
        """Delete the lease row if ``owner`` holds it."""
        row = self.lease_row()
        if row is not None and row["key"] == owner:
            self._client.delete(self.address.meta, filter=f"id == {LOCK_ID}")

"""The store implementations the contract suite (``test_store_contract.py``) runs against.

Each entry names a store and makes a fresh, unused index URI for one test. A store
appends itself here (a URI of its own scheme, registered in ``ctxselect.stores.open``)
and must pass the same suite unchanged; a store that needs a server names the session
fixture that provides it (``fixtures``), whose value ``new_uri`` receives.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class StoreKind:
    """One store implementation under test.

    Attributes:
        name: The test id (``embedded``, ``milvus``, ...).
        new_uri: Makes a URI no index lives at yet, given the test's ``tmp_path`` and
            the values of ``fixtures``.
        fixtures: Names of pytest fixtures the store needs (e.g. a running server).
    """

    name: str
    new_uri: Callable[..., str]
    fixtures: tuple[str, ...] = ()


def milvus_uri(tmp: Path, server: Any) -> str:
    """A new collection name on the session's Milvus server, named after the test."""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", tmp.name)[:40]
    return f"{server.uri}/t_{stem}_{uuid.uuid4().hex[:8]}"


STORE_KINDS = [
    StoreKind("embedded", lambda tmp: str(tmp / "index")),
    StoreKind("milvus", milvus_uri, fixtures=("milvus_server",)),
]

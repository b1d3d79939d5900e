"""The store implementations the contract suite (``test_store_contract.py``) runs against.

Each entry names a store and makes a fresh, unused index URI for one test. The embedded
store is the only one today; the next store appends itself here (a URI of its own scheme,
registered in ``ctxselect.stores.open``) and must pass the same suite unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class StoreKind:
    """One store implementation under test.

    Attributes:
        name: The test id (``embedded``, ``milvus``, ...).
        new_uri: Makes a URI no index lives at yet, given the test's ``tmp_path``.
    """

    name: str
    new_uri: Callable[[Path], str]


STORE_KINDS = [
    StoreKind("embedded", lambda tmp: str(tmp / "index")),
]

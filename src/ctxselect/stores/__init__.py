"""stores: where an index lives. ``open_store(uri)`` picks the implementation.

The :class:`Store` protocol (``stores.base``) is all that composition code sees; the
embedded store (``stores.embedded``) is what a folder path opens, the Milvus store
(``stores.milvus``) what ``milvus://HOST:PORT/NAME`` opens.
"""

from ctxselect.stores.base import ModeArrays, ServingStore, Snapshot, Store, VectorStore
from ctxselect.stores.open import open_store, register_scheme, schemes

__all__ = [
    "ModeArrays",
    "ServingStore",
    "Snapshot",
    "Store",
    "VectorStore",
    "open_store",
    "register_scheme",
    "schemes",
]

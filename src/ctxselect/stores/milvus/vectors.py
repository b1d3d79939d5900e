"""Cached embeddings of a Milvus index, by model id and chunk content hash.

Rows of kind ``vec`` in the meta collection, id = a hash of (model, key) so a stored
key is replaced by an upsert. The bytes are kept as base64 text: the dense index a
server-side search would use is a separate, typed vector field (docs/14-milvus.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ctxselect.errors import ConfigError
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus.calls import client_of

_VEC_BASE = 1 << 50  # vec ids are -(2**50 + h): apart from manifests' and heads'


def vec_id(model_id: str, key: str) -> int:
    """The row id of one vector."""
    return -(_VEC_BASE + (mc.hash63(f"{model_id}\x00{key}") >> 2))


class MilvusVectorCache:
    """A :class:`~ctxselect.stores.VectorStore` in the index's meta collection."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def _query(self, expr: str) -> list[dict]:
        meta = self.store.address.meta
        with mc.reaching(self.store.address, self.store):
            return mc.query_all(client_of(self.store), meta, expr, ["id", "key", "info", "data"])

    def get_many(self, model_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the stored vectors of ``model_id`` among ``keys``."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        for part in mc.batches([vec_id(model_id, k) for k in wanted]):
            for row in self._query(f'kind == "vec" and id in {mc.ints(part)}'):
                if row["key"] == model_id:
                    found[row["info"]] = _decode(row["data"])
        return {k: found[k] for k in wanted if k in found}

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store ``vectors`` (key -> vector) of ``model_id``; a stored key is replaced."""
        rows = [
            self.store.meta_row(
                vec_id(model_id, key),
                "vec",
                key=model_id,
                hkey=mc.hash63(model_id),
                info=key,
                data=_encode(vector),
            )
            for key, vector in vectors.items()
        ]
        client_of(self.store)
        with mc.reaching(self.store.address, self.store):
            self.store._put_meta(rows, upsert=True)

    def prune(self, model_id: str, keep: Sequence[str]) -> int:
        """Keep only ``model_id``'s vectors under ``keep``; return how many went."""
        kept = set(keep)
        doomed = [
            int(r["id"])
            for r in self._query('kind == "vec"')
            if r["key"] != model_id or r["info"] not in kept
        ]
        with mc.reaching(self.store.address, self.store):
            for part in mc.batches(doomed):
                client_of(self.store).delete(
                    self.store.address.meta, filter=f"id in {mc.ints(part)}"
                )
        return len(doomed)


def _encode(vector: np.ndarray) -> str:
    a = np.ascontiguousarray(vector)
    text = json.dumps(
        {
            "dtype": a.dtype.str,
            "shape": list(a.shape),
            "b64": base64.b64encode(a.tobytes()).decode(),
        }
    )
    if len(text) > mc.TEXT_BYTES:
        raise ConfigError(
            f"a vector of {a.size} values is too large for a Milvus index's vector cache "
            f"(at most ~{mc.TEXT_BYTES * 3 // 4 // a.itemsize} values): use a smaller embedder"
        )
    return text


def _decode(text: str) -> np.ndarray:
    value = json.loads(text)
    raw = base64.b64decode(value["b64"])
    return np.frombuffer(raw, dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()

"""The rows a generation of a Milvus index sees, read back as values: tombstones, chunk
and document rows, their Chunk and Document (mixed into
:class:`~ctxselect.stores.milvus.store.MilvusStore`), and document metadata from rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxselect.errors import NotFoundError
from ctxselect.stores import doc_fields
from ctxselect.stores.milvus import client as mc
from ctxselect.stores.milvus import schemas as ms
from ctxselect.types import Chunk, Document


class VisibleRows:
    """Reads of the rows a generation sees: born at or before it, minus those tombstoned
    at or before it (mixed into MilvusStore)."""

    uri: str
    address: mc.Address
    _client: Any

    def tombs(self, generation: int, what: str, refs: Sequence[int] | None = None) -> set[int]:
        """Ids of ``what`` rows ("chunk" or "doc") removed at or before ``generation``."""
        expr = f'kind == "tomb" and key == "{what}" and born <= {generation}'
        if refs is None:
            rows = mc.query_all(self._client, self.address.meta, expr, ["ref"])
            return {int(r["ref"]) for r in rows}
        out: set[int] = set()
        for part in mc.batches(list(refs)):
            found = mc.query_all(
                self._client, self.address.meta, f"{expr} and ref in {mc.ints(part)}", ["ref"]
            )
            out.update(int(r["ref"]) for r in found)
        return out

    def chunk_rows(self, generation: int, expr: str = "", live: bool = True) -> list[dict]:
        """Chunk rows born by ``generation`` (only the live ones with ``live``)."""
        where = f"born <= {generation}" + (f" and ({expr})" if expr else "")
        rows = mc.query_all(self._client, self.address.name, where, ms.CHUNK_FIELDS)
        if live and rows:
            dead = self.tombs(generation, "chunk", [r["id"] for r in rows])
            rows = [r for r in rows if r["id"] not in dead]
        return rows

    def doc_rows(self, generation: int, doc_ids: Sequence[str] | None, parts: bool) -> list[dict]:
        """Live document rows (every piece with ``parts``, else the first of each)."""
        base = f'kind == "doc" and born <= {generation}' + ("" if parts else " and num == 0")
        fields = ["id", "key", "ref", "num", "info"] + (["data"] if parts else [])
        if doc_ids is None:
            rows = mc.query_all(self._client, self.address.meta, base, fields)
        else:
            wanted, rows = set(doc_ids), []
            keys = sorted({mc.hash63(d) for d in wanted})
            for part in mc.batches(keys):
                expr = f"{base} and hkey in {mc.ints(part)}"
                found = mc.query_all(self._client, self.address.meta, expr, fields)
                rows.extend(r for r in found if r["key"] in wanted)
        dead = self.tombs(generation, "doc", sorted({int(r["ref"]) for r in rows}))
        return [r for r in rows if int(r["ref"]) not in dead]

    def to_chunk(self, row: dict, generation: int) -> Chunk:
        """The Chunk of a row (a long text read back from its document's span)."""
        text = row["body"][len(row["header"]) + 1 :] if row["header"] else row["body"]
        if row["span"]:
            text = self._document(row["doc_id"], generation).text[
                row["start_char"] : row["end_char"]
            ]
        return Chunk(
            row["chunk_id"],
            row["doc_id"],
            int(row["ordinal"]),
            int(row["start_char"]),
            int(row["end_char"]),
            text,
            row["header"],
            int(row["n_tokens"]),
            row["parent_id"],
        )

    def _document(self, doc_id: str, generation: int) -> Document:
        rows = self.doc_rows(generation, [doc_id], parts=True)
        if not rows:
            raise NotFoundError(
                f"no document {doc_id!r} in index {self.uri}: document ids are paths "
                f"relative to the indexed root (see `ctxselect search`)"
            )
        ref = max(int(r["ref"]) for r in rows)  # one live version; the newest if damaged
        parts = sorted((r for r in rows if int(r["ref"]) == ref), key=lambda r: r["num"])
        info = json.loads(parts[0]["info"])
        text = "".join(r["data"] for r in parts)
        return Document(
            doc_id, text, info["title"], info["source"], info["content_hash"], info["kind"]
        )


def document_fields_of(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Metadata by doc id from document rows (the newest version of each; user fields
    are kept in ``info`` since ``--where`` exists, so older documents have none), merged
    by :func:`ctxselect.stores.doc_fields.merged`."""
    out: dict[str, dict[str, str]] = {}
    for row in sorted(rows, key=lambda r: int(r["ref"])):
        info = json.loads(row["info"])
        out[row["key"]] = doc_fields.merged(
            info["kind"], row["key"], info["title"], info.get("fields", {})
        )
    return out

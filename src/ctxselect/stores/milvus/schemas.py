"""The collections of a Milvus index: their schemas, BM25 analysis and vector collections.

An index ``milvus://HOST:PORT/NAME`` is these collections (see the package docstring):

- ``NAME``: one row per chunk version (text, offsets, metadata, ``born``), with a BM25
  function on ``body`` (sparse field ``sparse``) for server-side keyword search.
- ``NAME__meta``: everything else, one row kind per ``kind``: ``doc`` (document text in
  pieces), ``tomb`` (a row's removal), ``blob`` (segment arrays in base64 pieces),
  ``manifest`` (its JSON in pieces), ``head`` (a committed generation), ``lock`` (the
  writer's lease), ``vec`` (cached embeddings) and ``layout`` (how the index was built,
  its identity and its vector collections; see ``layout``).
- ``NAME__denseDIM``: the vectors of the chunks embedded with DIM dimensions, for
  server-side ``dense`` and ``hybrid``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxselect.errors import IndexMismatchError
from ctxselect.stores.milvus.client import DENSE, META, TEXT_BYTES, Address

LAYOUT_VERSION = 1
"""The collections' layout this code reads and writes (the ``layout`` row holds it)."""

CHUNK_FIELDS = [
    *("id", "chunk_id", "doc_id", "dkey", "ckey", "ordinal", "start_char", "end_char"),
    *("header", "n_tokens", "parent_id", "body", "span", "born"),
]
META_FIELDS = ["id", "kind", "key", "hkey", "ref", "born", "num", "info", "data"]


DEFAULT_BM25 = {"k1": 1.5, "b": 0.75, "stem": True, "stopwords": True}
"""The keyword analysis a new chunk collection gets (``BM25Params()``'s): the server's
BM25 serves an index whose settings equal these (see ``serving``)."""


def analyzer(bm25: dict[str, Any]) -> dict[str, Any]:
    """Milvus analyzer parameters closest to ours: lowercase, English Snowball stems, and
    the stop words of ``ctxselect.retrieve`` (bm25s's list)."""
    filters: list[Any] = ["lowercase"]
    if bm25["stem"]:
        filters.append({"type": "stemmer", "language": "english"})
    if bm25["stopwords"]:
        # the list is data; the store never analyzes text itself
        from ctxselect.retrieve._stopwords import STOPWORDS_EN

        filters.append({"type": "stop", "stop_words": sorted(STOPWORDS_EN)})
    return {"tokenizer": "standard", "filter": filters}


def add_bm25(schema: Any, index: Any, bm25: dict[str, Any]) -> None:
    """Add ``body`` (analyzed as ``bm25`` says), the BM25 function from it into ``sparse``,
    and the sparse field's BM25 index with ``bm25``'s k1 and b."""
    from pymilvus import DataType, Function, FunctionType

    schema.add_field(
        "body",
        DataType.VARCHAR,
        max_length=TEXT_BYTES,
        enable_analyzer=True,
        analyzer_params=analyzer(bm25),
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["body"],
            output_field_names=["sparse"],
        )
    )
    index.add_index(
        field_name="sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"bm25_k1": float(bm25["k1"]), "bm25_b": float(bm25["b"])},
    )


def chunk_schema(client: Any, bm25: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Schema and index parameters of the chunk collection.

    ``body`` is the text a keyword index sees (header, newline, chunk text; the chunk
    text is its tail), the input of a BM25 function whose sparse output ``sparse`` is
    indexed with ``bm25``'s k1 and b.
    """
    from pymilvus import DataType

    bm25 = bm25 or DEFAULT_BM25
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("chunk_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    for name in ("dkey", "ckey", "ordinal", "start_char", "end_char", "n_tokens"):
        schema.add_field(name, DataType.INT64)
    schema.add_field("header", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("parent_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("span", DataType.BOOL)  # True: text too long, read from the document
    schema.add_field("born", DataType.INT64)
    index = client.prepare_index_params()
    add_bm25(schema, index, bm25)
    return schema, index


def dense_name(address: Address, dim: int) -> str:
    """The collection of the chunk vectors of ``dim`` dimensions (server-side ``dense``)."""
    return f"{address.name}{DENSE}{int(dim)}"


def dense_names(client: Any, address: Address, recorded: Sequence[str] | None) -> list[str]:
    """Every vector collection of the index that exists (one per dimension embedded).

    ``recorded`` is the list the index's layout row keeps (every collection a commit of
    this index created): only those are the index's, since another index or a user may
    own a collection whose name looks like one. ``None`` (an index made before the list
    was kept): the names of the form ``NAME__denseDIM`` whose collection has this layout's
    vector fields and is not itself an index (no ``...__meta`` beside it).
    """
    existing = set(client.list_collections())
    if recorded is not None:
        return [n for n in recorded if n in existing]
    prefix = address.name + DENSE
    found = []
    for n in sorted(existing):
        if not (n.startswith(prefix) and n[len(prefix) :].isdigit()) or n + META in existing:
            continue
        fields = {f["name"] for f in client.describe_collection(n).get("fields", [])}
        if {"vector", "chunk_id", "born"} <= fields and "ckey" not in fields:
            found.append(n)
    return found


def dense_schema(client: Any, dim: int, bm25: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Schema and exact (FLAT, inner product = cosine of unit vectors) index of the chunk
    vectors: one row per embedded chunk row, id = the chunk row's id.

    The row also holds the chunk's ``body`` with the chunk collection's BM25 function on
    it, because Milvus's ``hybrid_search`` fuses searches of one collection only: the
    server-side ``hybrid`` searches ``sparse`` and ``vector`` of this collection.
    """
    from pymilvus import DataType

    bm25 = bm25 or DEFAULT_BM25
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("chunk_id", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("born", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(dim))
    index = client.prepare_index_params()
    index.add_index(field_name="vector", index_type="FLAT", metric_type="IP")
    add_bm25(schema, index, bm25)
    return schema, index


def meta_schema(client: Any) -> tuple[Any, Any]:
    """Schema and index parameters of the meta collection (``v`` only because Milvus
    requires a vector field)."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field("key", DataType.VARCHAR, max_length=TEXT_BYTES)
    for name in ("hkey", "ref", "born", "num"):
        schema.add_field(name, DataType.INT64)
    schema.add_field("info", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("data", DataType.VARCHAR, max_length=TEXT_BYTES)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index(field_name="v", index_type="FLAT", metric_type="L2")
    return schema, index


def check_fields(client: Any, address: Address) -> None:
    """Refuse collections this code did not make (other fields: another layout).

    Raises:
        IndexMismatchError: A collection of the index has other fields than this
            layout's (names the collection and how to fix it).
    """
    for name, expected in ((address.name, CHUNK_FIELDS), (address.meta, META_FIELDS)):
        described = client.describe_collection(name)
        fields = {f["name"] for f in described.get("fields", [])}
        missing = sorted(set(expected) - fields)
        if missing:
            raise IndexMismatchError(
                f"index {address.uri}: collection {name!r} was built with other settings "
                f"(it lacks the fields {', '.join(missing)} of a ctxselect index, layout "
                f"{LAYOUT_VERSION}): pick another NAME, or drop the collection and rebuild "
                f"with `ctxselect index PATH... --index {address.uri}`"
            )

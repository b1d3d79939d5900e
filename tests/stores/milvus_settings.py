"""Index settings a Milvus server can rank itself (shared by the Milvus serving tests).

Milvus's analyzer has no identifier splitting, so an index whose BM25 splits
identifiers is ranked client-side (docs/14-milvus.md). Tests of server-side ranking
build with it off, where this version of ``BM25Params`` has the setting.
"""

from __future__ import annotations

import dataclasses

from ctxselect.config import BM25Params


def served_bm25(**settings: object) -> BM25Params:
    """``BM25Params(**settings)`` with every analysis option Milvus lacks off."""
    names = {f.name for f in dataclasses.fields(BM25Params)}
    off = {"identifiers": False} if "identifiers" in names else {}
    return BM25Params(**{**off, **settings})  # type: ignore[arg-type]

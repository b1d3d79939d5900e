"""HNSW recall against exact search on the real SciFact chunk embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from _support.dense_helpers import labeled, real_dense
from ctxselect.retrieve import DenseRetriever
from ctxselect.retrieve._ann import HnswIndex


@pytest.mark.data
@pytest.mark.slow
def test_hnsw_recall_at_10_vs_exact_on_scifact(request, scifact_dir) -> None:
    exact = real_dense(request, scifact_dir)
    queries, _ = labeled(scifact_dir)
    vectors = exact.embed_queries(list(queries.values()))
    rows = np.flatnonzero(exact.embedded)
    ann = DenseRetriever(
        exact.table,
        exact.embedder,
        exact.vectors,
        exact.embedded,
        HnswIndex.build(exact.vectors, rows),
    )
    found = []
    for v in vectors:
        want = set(exact.ranked(v, 10)[0].tolist())
        got = set(ann.ann.candidates(v, 10).tolist())
        found.append(len(want & got) / 10)
    assert len(found) == 300
    assert float(np.mean(found)) >= 0.98

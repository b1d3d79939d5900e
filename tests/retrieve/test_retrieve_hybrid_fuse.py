"""Fusion math on hand-made lists: RRF, convex with minmax and zscore, weights, ties."""

from __future__ import annotations

import numpy as np
import pytest

from ctxselect.config import FuseSpec
from ctxselect.errors import ConfigError, UnknownNameError
from ctxselect.retrieve.fuse import fuse, minmax, pool, zscore

KEYWORD = [(1, 9.0), (2, 6.0), (3, 3.0)]
DENSE = [(3, 0.9), (4, 0.5), (1, 0.1)]


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = dict(fuse(KEYWORD, DENSE, FuseSpec("rrf", k=60, weight=0.5)))
    assert fused[1] == pytest.approx(0.5 / 61 + 0.5 / 63)
    assert fused[2] == pytest.approx(0.5 / 62)
    assert fused[3] == pytest.approx(0.5 / 63 + 0.5 / 61)
    assert fused[4] == pytest.approx(0.5 / 62)


def test_rrf_ties_break_on_key_and_weights_shift_the_order() -> None:
    assert [key for key, _ in fuse(KEYWORD, DENSE, FuseSpec(k=60))] == [1, 3, 2, 4]
    assert [key for key, _ in fuse(KEYWORD, DENSE, FuseSpec(k=1, weight=0.9))][:2] == [3, 4]
    assert [key for key, _ in fuse(KEYWORD, DENSE, FuseSpec(weight=0.0))][:3] == [1, 2, 3]


def test_convex_minmax_by_hand() -> None:
    fused = dict(fuse(KEYWORD, DENSE, FuseSpec("convex", norm="minmax", weight=0.25)))
    # item 4 is missing from the keyword list: it takes that list's lowest score, 3.0
    kw = {1: 9.0, 2: 6.0, 3: 3.0, 4: 3.0}
    dn = {1: 0.1, 2: 0.1, 3: 0.9, 4: 0.5}  # item 2 takes the dense list's lowest, 0.1
    for key in kw:
        want = 0.75 * (kw[key] - 3.0) / 6.0 + 0.25 * (dn[key] - 0.1) / 0.8
        assert fused[key] == pytest.approx(want)


def test_convex_zscore_by_hand() -> None:
    fused = dict(fuse(KEYWORD, DENSE, FuseSpec("convex", norm="zscore", weight=0.5)))
    kw = np.array([9.0, 6.0, 3.0, 3.0])
    dn = np.array([0.1, 0.1, 0.9, 0.5])
    want = 0.5 * (kw - kw.mean()) / kw.std() + 0.5 * (dn - dn.mean()) / dn.std()
    assert [fused[k] for k in (1, 2, 3, 4)] == pytest.approx(want.tolist())


def test_pool_uses_exact_scores_when_given_and_depth_cuts_lists() -> None:
    items = pool(KEYWORD, DENSE, 2, dense_score=lambda keys: np.full(len(keys), -1.0))
    assert items.keys.tolist() == [1, 2, 3, 4]
    assert items.keyword_rank.tolist() == [1, 2, 0, 0]  # 3 is deeper than 2 in the keyword list
    assert items.keyword.tolist() == [9.0, 6.0, 3.0, 3.0]  # its score is still known
    assert items.dense.tolist() == [0.1, -1.0, 0.9, 0.5]


def test_normalisers_handle_flat_and_empty_lists() -> None:
    assert minmax(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]
    assert zscore(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]
    assert len(minmax(np.array([]))) == 0 and len(zscore(np.array([]))) == 0
    assert minmax(np.array([1.0, 3.0, 2.0])).tolist() == [0.0, 1.0, 0.5]


def test_fuse_spec_validation_and_unknown_names() -> None:
    for bad in ({"k": 0}, {"weight": 1.5}, {"weight": True}, {"depth": 0}):
        with pytest.raises(ConfigError):
            FuseSpec(**bad)
    with pytest.raises(UnknownNameError, match="convex, rrf"):
        fuse(KEYWORD, DENSE, FuseSpec(method="sum"))
    with pytest.raises(UnknownNameError, match="minmax, zscore"):
        fuse(KEYWORD, DENSE, FuseSpec(method="convex", norm="l2"))
    assert FuseSpec("convex", norm="zscore", weight=0.6).label() == "convex zscore w=0.60"

"""The typed manifest: one migration path from every version, clear errors, one reader."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import ctxselect as cs
from ctxselect.config import DEFAULT_ANN_THRESHOLD, BM25Params, ChunkSpec, FuseSpec
from ctxselect.errors import IndexCorruptError, IndexMismatchError
from ctxselect.manifest import (
    MANIFEST_VERSION,
    VERSION_KEY,
    EmbedderSpec,
    Manifest,
    StoreState,
)
from ctxselect.stores import open_store
from ctxselect.types import Document

SRC = Path(__file__).resolve().parents[2] / "src" / "ctxselect"

CHUNK = {"chunker": "tokens", "size": 8, "overlap": 0, "tokenizer": "cl100k"}
BM25 = {"k1": 1.2, "b": 0.5, "stem": False, "stopwords": True}
EMBEDDER = {"name": "hash", "model_id": "hash-v1-64", "dim": 64, "ann_threshold": 7}
FUSION = {"method": "convex", "k": 60.0, "norm": "zscore", "weight": 0.3, "depth": 100}
CALIBRATION = {"bm25": {"mode": "bm25", "features": ["rel"], "threshold": 0.2}}

# Every shape the code has written, oldest first (keys were only ever added).
V01 = {  # ctxselect 0.1 (schema 1): settings, no segments
    "schema_version": 1,
    "chunk": CHUNK,
    "bm25": BM25,
    "modes": ["bm25", "tfidf", "tfidf-sum"],
    "roots": ["/docs"],
    "default_mode": "bm25",
    "created": "2026-11-29T16:00:00+00:00",
    "updated": "2026-11-29T16:00:00+00:00",
}
INCREMENTAL = {  # segments, pending rows, counts and a base file
    **V01,
    "schema_version": 2,
    "generation": 4,
    "segments": [3, 4],
    "pending": {"delta_rows": 5, "dead_rows": 2},
    "counts": {"documents": 3, "chunks": 40, "tokens": 300},
    "base": {"file": "arrays/base-1.bin", "rows": 35, "layout": {}, "arrays": {}},
    "compacted": "2026-11-29T17:00:00+00:00",
}
DENSE = {  # dense retrieval, tuned fusion; an embedder recorded before ann_threshold
    **INCREMENTAL,
    "modes": ["bm25", "tfidf", "tfidf-sum", "dense"],
    "embedder": {k: v for k, v in EMBEDDER.items() if k != "ann_threshold"},
    "fusion": FUSION,
    "tuning": {"metric": "ndcg@10", "cv": 0.7},
    "default_mode": "hybrid",
}
CALIBRATED = {**DENSE, "schema_version": 3, "embedder": EMBEDDER, "calibration": CALIBRATION}


def _full() -> Manifest:
    return Manifest(
        chunk=ChunkSpec(**CHUNK),
        bm25=BM25Params(**BM25),
        modes=("bm25", "dense"),
        roots=("/a", "/b"),
        default_mode="hybrid",
        embedder=EmbedderSpec(**EMBEDDER),
        fusion=FuseSpec(**FUSION),
        tuning={"metric": "ndcg@10"},
        calibration=CALIBRATION,
        created="c",
        updated="u",
        compacted="k",
        built=True,
    )


def test_a_manifest_round_trips_through_json() -> None:
    manifest = _full()
    written = json.loads(json.dumps(manifest.to_dict()))
    assert written[VERSION_KEY] == MANIFEST_VERSION
    assert Manifest.from_dict(written) == manifest


def test_to_dict_writes_settings_only_never_the_store_bookkeeping() -> None:
    read = Manifest.from_dict(CALIBRATED)
    written = read.to_dict()
    assert not {"generation", "segments", "pending", "counts", "base", "schema_version"} & set(
        written
    )
    assert read.state.generation == 4  # read, but the store keeps writing it


def test_ctxselect_0_1_manifest_migrates_with_defaults() -> None:
    read = Manifest.from_dict(V01)
    assert read.version == 1 and read.built
    # built before identifier parts existed: read without them, whatever the default now
    assert read.chunk == ChunkSpec(**CHUNK)
    assert read.bm25 == BM25Params(**BM25, identifiers=False)
    assert read.modes == ("bm25", "tfidf", "tfidf-sum") and read.roots == ("/docs",)
    assert (read.embedder, read.fusion, read.tuning, read.calibration) == (None, None, None, {})
    assert read.compacted == "" and read.state == StoreState()
    assert read.extra == {"schema_version": 1}


def test_incremental_manifest_reads_the_store_state() -> None:
    state = Manifest.from_dict(INCREMENTAL).state
    assert state == StoreState(
        generation=4,
        segments=(3, 4),
        delta_rows=5,
        dead_rows=2,
        counts={"documents": 3, "chunks": 40, "tokens": 300},
        base_rows=35,
    )


def test_dense_manifest_without_ann_threshold_gets_the_default() -> None:
    read = Manifest.from_dict(DENSE)
    assert read.embedder == EmbedderSpec("hash", "hash-v1-64", 64, DEFAULT_ANN_THRESHOLD)
    assert read.fusion == FuseSpec(**FUSION) and read.default_mode == "hybrid"
    assert read.tuning == {"metric": "ndcg@10", "cv": 0.7}


@pytest.mark.parametrize("raw", [V01, INCREMENTAL, DENSE, CALIBRATED], ids=lambda r: str(len(r)))
def test_every_old_version_migrates_to_the_current_one_losslessly(raw: dict[str, Any]) -> None:
    read = Manifest.from_dict(raw)
    again = Manifest.from_dict({**raw, **read.to_dict()})  # as an index write leaves it
    assert again == dataclasses.replace(read, version=MANIFEST_VERSION)
    for key, value in read.to_dict().items():  # every value the old manifest held, kept
        if key == "bm25":  # written out: the identifiers setting it was built with (none)
            assert value == {**raw[key], "identifiers": False}
        elif key in raw and key != "embedder":
            assert raw[key] == value, key


def test_a_new_empty_store_reads_as_defaults_not_built() -> None:
    read = Manifest.from_dict({"schema_version": 3, "generation": 0})
    assert not read.built and read.chunk == ChunkSpec() and read.default_mode == "bm25"


BAD = [
    ("chunk", "tokens", "not an object"),
    ("chunk", {**CHUNK, "window": 3}, "unknown setting 'window'"),
    ("chunk", {**CHUNK, "size": 0}, "chunk size must be"),
    ("chunk", {**CHUNK, "tokenizer": 5}, "tokenizer is 5, not a str"),
    ("bm25", {**BM25, "stem": "yes"}, "stem is 'yes', not a bool"),
    ("bm25", {**BM25, "k1": float("nan")}, "BM25 k1 must be"),
    ("modes", "bm25", "not a list of text"),
    ("roots", [1], "not a list of text"),
    ("default_mode", 3, "not text"),
    ("embedder", {"name": "hash", "dim": 64}, "needs a name and a model_id"),
    ("embedder", {**EMBEDDER, "dim": 0}, "needs a name and a model_id"),
    ("embedder", {**EMBEDDER, "pooling": "mean"}, "and nothing else"),
    ("embedder", "hash", "not an object"),
    ("fusion", {**FUSION, "k": -1}, "fusion k must be"),
    ("tuning", [1], "not an object"),
    ("calibration", {"bm25": 1}, "a mode's calibration is not an object"),
    ("created", 5, "not text"),
    ("generation", -1, "not a commit number"),
    ("segments", [0], "not a list of segment numbers"),
    ("counts", {"chunks": "many"}, "other than counts"),
    ("pending", [], "not an object"),
    ("base", {"file": "arrays/x.bin"}, "no row count"),
    (VERSION_KEY, "two", "not a version number"),
    (VERSION_KEY, 0, "not a version number"),
]


@pytest.mark.parametrize(("key", "value", "why"), BAD, ids=[f"{k}-{w}" for k, _, w in BAD])
def test_a_wrong_shape_is_damage_named_by_key_with_the_fix(key: str, value: Any, why: str) -> None:
    with pytest.raises(IndexCorruptError) as caught:
        Manifest.from_dict({**CALIBRATED, key: value}, index="/ix")
    message = str(caught.value)
    assert f"the manifest of index /ix is damaged ({key!r}: " in message
    assert why in message
    assert message.endswith("`rm -r /ix && ctxselect index PATH... --index /ix`")


def test_a_manifest_that_is_not_an_object_is_damage() -> None:
    with pytest.raises(IndexCorruptError, match="it is a list, not an object"):
        Manifest.from_dict([], index="/ix")  # type: ignore[arg-type]


def test_a_newer_manifest_version_asks_for_an_upgrade() -> None:
    with pytest.raises(IndexMismatchError, match=r"manifest version 3, newer.*pip install -U"):
        Manifest.from_dict({**CALIBRATED, VERSION_KEY: MANIFEST_VERSION + 1}, index="/ix")


def test_unknown_top_level_keys_are_kept_in_extra_and_not_written() -> None:
    read = Manifest.from_dict({**CALIBRATED, "future": {"x": 1}})
    assert read.extra["future"] == {"x": 1} and read.extra["base"] == CALIBRATED["base"]
    assert "future" not in read.to_dict()


def _docs(*texts: str) -> list[Document]:
    return [Document(f"{i}.md", t, source=f"{i}.md", content_hash=t) for i, t in enumerate(texts)]


def test_an_index_write_records_the_current_version_and_keeps_unknown_keys(tmp_path) -> None:
    ix = tmp_path / "ix"
    spec = ChunkSpec(chunker="tokens", size=8)
    cs.add_documents(_docs("apples and pears", "bananas"), ix, chunk=spec)
    store = open_store(ix)
    try:
        with store.lock(0):
            store.commit_settings({"future": [1, 2], VERSION_KEY: 1})
    finally:
        store.close()
    cs.add_documents(_docs("apples and pears", "bananas", "cherries"), ix)
    with cs.open_index(ix) as idx:
        assert idx.manifest[VERSION_KEY] == MANIFEST_VERSION  # migrated by the write
        assert idx.settings.extra["future"] == [1, 2]  # kept on disk, untouched
        assert idx.settings.chunk == spec and idx.settings.built
        assert idx.settings == Manifest.from_dict(idx.store.read_manifest(), index=idx.path)
        for key, value in idx.settings.to_dict().items():
            assert idx.manifest[key] == value, key


def test_a_damaged_setting_is_refused_when_the_index_opens(tmp_path) -> None:
    ix = tmp_path / "ix"
    cs.add_documents(_docs("apples"), ix, chunk=ChunkSpec(chunker="tokens", size=8))
    store = open_store(ix)
    try:
        with store.lock(0):
            store.commit_settings({"bm25": {**BM25, "k1": "high"}})
    finally:
        store.close()
    with pytest.raises(IndexCorruptError, match=rf"index {ix} is damaged \('bm25': "):
        cs.open_index(ix)


# -- one reader: no string-key reads of the manifest outside manifest.py and the store --


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _string_key_reads(source: str) -> list[int]:
    """Lines that read a manifest by string key: ``m["k"]``, ``m.get("k")``, ``"k" in m``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr != "get" or not node.args:
                continue
            target, key = node.func.value, node.args[0]
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            target, key = node.comparators[0], node.left
        else:
            continue
        string = isinstance(key, ast.Constant) and isinstance(key.value, str)
        if string and "manifest" in _name(target).lower():
            lines.append(node.lineno)
    return lines


def test_the_scan_finds_each_kind_of_string_key_read() -> None:
    source = (
        'a = manifest["chunk"]\n'
        'b = self.manifest.get("embedder")\n'
        'c = store.read_manifest().get("roots", [])\n'
        'd = "chunk" in snap.manifest\n'
        "e = manifest.embedder\n"
        "f = Manifest.from_dict(raw_manifest)\n"
    )
    assert _string_key_reads(source) == [1, 2, 3, 4]


def test_only_the_manifest_module_and_the_stores_read_manifest_keys() -> None:
    # a store implementation (stores/embedded/, stores/milvus/) keeps its own bookkeeping
    # keys in the manifest; stores/base.py and stores/open.py read none
    allowed = {SRC / "manifest.py"}
    stores = {p for p in (SRC / "stores").rglob("*.py") if len(p.relative_to(SRC).parts) > 2}
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in allowed | stores
        for line in _string_key_reads(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []

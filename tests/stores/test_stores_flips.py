"""Every flipped bit is detected: random single-bit flips over every file of an index.

Each flip goes to a fresh copy of a small index that has a base file, a delta segment,
dead rows and dead terms (an update without compaction), with the WAL checkpointed into
``index.sqlite``. For every flip: a search (bm25 and tfidf) returns exactly the
reference ranking or raises a CtxselectError (never another exception), and ``verify``
flags every flip that a search detected or that changed a returned chunk.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

import ctxselect as cs
from ctxselect.errors import CtxselectError

WORDS = [
    "clock",
    "reset",
    "synchronizer",
    "metastability",
    "floorplan",
    "timing",
    "domain",
    "handshake",
    "latch",
    "gating",
    "power",
    "placement",
    "routing",
    "skew",
    "jitter",
    "fifo",
    "pointer",
    "gray",
    "counter",
    "café",
    "naïve",
    "straße",
    "über",
    "façade",
    "élan",
]
QUERIES = ("reset synchronizer", "clock skew jitter", "café über façade", "fifo gray pointer")
MODES = ("bm25", "tfidf")


def _corpus(root: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        paras = [" ".join(rng.choices(WORDS, k=rng.randint(20, 60))) for _ in range(3)]
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paras) + "\n")


def _checkpoint(index: Path) -> None:
    conn = sqlite3.connect(index / "index.sqlite")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.fixture(scope="module")
def damaged_base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """An index with a base, one delta segment, dead rows and dead terms; its rankings."""
    tmp = tmp_path_factory.mktemp("flips")
    docs, index = tmp / "docs", tmp / "ix"
    _corpus(docs, 24, seed=1)
    cs.index_paths([docs], index, compact_fraction=None)
    _corpus(docs, 3, seed=2)  # rewrite three notes, remove one: a delta and dead rows
    (docs / "n23.md").unlink()
    cs.index_paths([docs], index, compact_fraction=None)
    with cs.open_index(index) as idx:
        manifest = idx.store.read_manifest()
        assert manifest["segments"] and manifest["pending"]["dead_rows"] > 0
        reference = _results(idx)
    _checkpoint(index)
    assert not (index / "index.sqlite-wal").exists() or not (
        (index / "index.sqlite-wal").stat().st_size
    )
    assert cs.verify_index(index).ok
    return index, reference


def _results(idx: cs.Index) -> dict:
    return {
        (mode, q): [
            (h.chunk_id, h.doc_id, h.score, h.start, h.end, h.n_tokens, h.text, h.header)
            for h in idx.search(q, 10, mode)
        ]
        for mode in MODES
        for q in QUERIES
    }


def _flip(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    at = rng.randrange(len(data))
    data[at] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


def _one(index: Path, reference: dict, work: Path, rng: random.Random, n: int) -> str:
    """Flip one bit of one file of a fresh copy; return how the damage showed."""
    copy = work / f"c{n}"
    shutil.copytree(index, copy)
    files = sorted(p for p in copy.rglob("*") if p.is_file() and p.stat().st_size)
    _flip(files[n % len(files)], rng)
    try:
        with cs.open_index(copy) as idx:
            got = _results(idx)
        at_search = False
    except CtxselectError:
        got, at_search = None, True
    verified = cs.verify_index(copy).ok  # must not raise either
    shutil.rmtree(copy)
    if got is not None and got != reference:
        return "silent wrong result" if verified else "changed, flagged by verify only"
    if at_search:
        return "detected at open/search" if not verified else "search error, verify ok"
    return "harmless" if verified else "detected by verify"


def _run(damaged_base: tuple[Path, dict], tmp_path: Path, flips: int, seed: int) -> Counter:
    index, reference = damaged_base
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    for n in range(flips):
        try:
            outcomes[_one(index, reference, tmp_path, rng, n)] += 1
        except Exception as exc:  # the count the test exists for: must stay 0
            outcomes[f"traceback {type(exc).__name__}: {exc}"] += 1
    print(f"\n{flips} flips: {dict(outcomes)}")
    return outcomes


def _check(outcomes: Counter, flips: int) -> None:
    bad = {k: v for k, v in outcomes.items() if k.startswith(("silent", "traceback", "changed"))}
    assert bad == {}
    assert outcomes["search error, verify ok"] == 0
    assert sum(outcomes.values()) == flips
    assert outcomes["detected at open/search"] + outcomes["detected by verify"] > 0


def test_200_random_bit_flips_are_harmless_or_detected(damaged_base, tmp_path):
    _check(_run(damaged_base, tmp_path, 200, seed=14), 200)


@pytest.mark.slow
def test_2000_random_bit_flips_are_harmless_or_detected(damaged_base, tmp_path):
    _check(_run(damaged_base, tmp_path, 2000, seed=1414), 2000)


def test_flips_in_an_index_without_checksums_never_crash_a_search(damaged_base, tmp_path):
    """An index written before checksums: the structural checks at open turn damage into
    a CtxselectError (no traceback); wrong results cannot all be caught without checksums."""
    index, reference = damaged_base
    legacy = tmp_path / "legacy"
    shutil.copytree(index, legacy)
    conn = sqlite3.connect(legacy / "index.sqlite", isolation_level=None)
    base = json.loads(conn.execute("SELECT value FROM manifest WHERE key = 'base'").fetchone()[0])
    del base["crc32"]
    conn.execute("UPDATE manifest SET value = ? WHERE key = 'base'", (json.dumps(base),))
    conn.execute("DELETE FROM manifest WHERE key IN ('checksum', 'checksums', 'chunks_digest')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    outcomes = _run((legacy, reference), tmp_path, 200, seed=41)
    assert not [k for k in outcomes if k.startswith("traceback")]
    assert outcomes["search error, verify ok"] == 0

"""Power loss: a simulated power cut at every disk operation of a sequence of index writes
recovers to the last durable state (before or after the write in progress, never a mix,
never a lost index).

Every file operation of the store goes through ``stores.embedded.disk``; the test swaps in
a recording disk (``power_disk.py``) and runs index, add, remove, compact and rebuilds
with changed settings. For each operation index ``i`` and each of two variants of what the
file system kept (see ``power_disk``), it writes out the state a power cut at ``i`` leaves
and checks: the index opens, ``verify`` finds no problem, it holds the documents of the
state before or after the write in progress, and its search results equal those the
running process saw right after the commit the database recovered to.

Limits of the model (also in docs/12-updates.md):

- SQLite is not simulated: the database is taken at its last durable commit as SQLite
  documents it (WAL + synchronous=FULL: durable when COMMIT returns; NORMAL: once a
  checkpoint ran). A disk or file system that acknowledges fsync without persisting
  (some consumer drives, some virtual disks) breaks that guarantee and this one.
- File contents not fsynced are truncated to nothing or a random prefix; directory
  entries either all survive or only those made durable by a directory fsync. Other mixes
  (some entries of one directory kept, others dropped; bytes reordered within a file) are
  not enumerated.
- The writer lock file and the vector cache's own commits are not modelled (neither is
  needed to find the index's data again).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from power_disk import Op, RecordingDisk, materialize

import ctxselect as cs
from ctxselect.stores.embedded import disk, writes
from ctxselect.stores.embedded import sqlite as sqlite_store
from ctxselect.stores.embedded.sqlite import SQLiteStore
from ctxselect.types import Document

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "mu", "the"]
QUERIES = ("alpha beta", "omega", "sigma kappa lambda", "mu mu gamma")
MODES = ("bm25", "tfidf")
SPECS = (
    cs.ChunkSpec(chunker="paragraph", size=60, tokenizer="chars4"),
    cs.ChunkSpec(chunker="paragraph", size=90, tokenizer="chars4"),
)
Step = Callable[[Path], object]


def _text(rng: random.Random) -> str:
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        for _ in range(rng.randint(1, 6))
    ]
    return "\n\n".join(paragraphs)


def _plan(rng: random.Random, corpus: Path, n_steps: int) -> list[tuple[str, Step]]:
    """Index, then ``n_steps`` writes drawn from add/remove/compact/rebuild (seeded)."""
    steps: list[tuple[str, Step]] = [
        ("index", lambda ix: cs.index_paths([corpus], ix, chunk=SPECS[0]))
    ]
    fixed = ["add", "add", "remove", "compact", "rebuild", "add", "compact", "rebuild"]
    kinds = fixed + [
        rng.choice(("add", "add", "remove", "compact", "rebuild"))
        for _ in range(n_steps - len(fixed))
    ]
    live: set[str] = set()
    for i, kind in enumerate(kinds[:n_steps]):
        if kind == "add" or (kind == "remove" and not live):
            docs = [Document(f"api{j}", _text(rng)) for j in rng.sample(range(6), 3)]
            live.update(d.doc_id for d in docs)
            steps.append(("add", lambda ix, d=docs: cs.add_documents(d, ix)))
        elif kind == "remove":
            gone = sorted(live)[:1]
            live.difference_update(gone)
            steps.append(("remove", lambda ix, g=gone: cs.remove_documents(g, ix)))
        elif kind == "compact":
            steps.append(("compact", lambda ix: cs.compact_index(ix)))
        else:  # changed settings: a full rebuild (the rescan also drops the api documents)
            live.clear()
            spec = SPECS[(i + 1) % 2]
            bm25 = cs.BM25Params(k1=1.2 + 0.1 * i)
            steps.append(("rebuild", lambda ix, s=spec, b=bm25: _rebuild(ix, s, b)))
    return steps


def _rebuild(ix: Path, spec: cs.ChunkSpec, bm25: cs.BM25Params) -> object:
    return cs.index_paths([], ix, chunk=spec, bm25=bm25)


def _fingerprint(ix: Path) -> tuple[dict[str, str], list[Any]]:
    """Documents held, and every query's top 10 in every mode (an index created but never
    written holds nothing: the state before the first write)."""
    with cs.open_index(ix) as idx:
        held = idx.store.doc_hashes()
        if not held and not isinstance(idx.store.read_manifest().get("base"), dict):
            return held, []
        results = [
            [(h.chunk_id, round(h.score, 9)) for h in idx.search(q, 10, mode)]
            for mode in MODES
            for q in QUERIES
        ]
    return held, results


def _record(tmp_path: Path, seed: int, n_steps: int) -> tuple[list[Op], list[dict[str, str]]]:
    """Run the writes through a recording disk; return its log and the documents after
    each step (index 0: before the first)."""
    rng = random.Random(seed)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(6):
        (corpus / f"file{i}.txt").write_text(_text(rng) + "\n", encoding="utf-8")
    root = tmp_path / "live"
    root.mkdir()
    recorder = RecordingDisk(root)
    states: list[dict[str, str]] = [{}]
    with disk.using(recorder), _observing_close(recorder):
        for number, (_, step) in enumerate(_plan(rng, corpus, n_steps), start=1):
            recorder.step = number
            step(root / "ix")
            with cs.open_index(root / "ix") as idx:
                states.append(idx.store.doc_hashes())
    return recorder.ops, states


@contextlib.contextmanager
def _observing_close(recorder: RecordingDisk) -> Iterator[None]:
    """Tell the recorder when a store closes: SQLite checkpoints on the last close, which
    is what makes NORMAL commits durable."""
    close = SQLiteStore.close

    def closing(store: SQLiteStore) -> None:
        close(store)
        if disk.current() is recorder:
            recorder.closed(store.path)

    SQLiteStore.close = closing  # type: ignore[method-assign]
    try:
        yield
    finally:
        SQLiteStore.close = close  # type: ignore[method-assign]


def _cuts(ops: list[Op], variants: tuple[str, ...]) -> Iterator[tuple[int, str]]:
    for i in range(len(ops) + 1):
        for variant in variants:
            yield i, variant


def _check_cut(
    ops: list[Op],
    states: list[dict[str, str]],
    i: int,
    variant: str,
    where: Path,
    reference: dict[int, tuple[dict[str, str], list[Any]]],
    rng: random.Random,
) -> str | None:
    """Recover from a cut before operation ``i``; return what went wrong, or None."""
    step = ops[i].step if i < len(ops) else len(states) - 1
    at = materialize(ops, i, variant, where / "cut", rng)
    allowed = [states[step - 1], states[step]] if i < len(ops) else [states[step]]
    if at is None:
        ok = step == 1 and not (where / "cut" / "ix" / "index.sqlite").exists()
        return None if ok else "no database survived"
    try:
        report = cs.verify_index(where / "cut" / "ix")
        if not report.ok:
            return f"verify: {report.problems}"
        got = _fingerprint(where / "cut" / "ix")
    except cs.CtxselectError as exc:
        return f"lost: {exc}"
    if at not in reference:
        materialize(ops, at + 1, "live", where / "live", rng)
        reference[at] = _fingerprint(where / "live" / "ix")
    if got[0] not in allowed:
        return "documents of neither the state before nor after the write"
    return None if got == reference[at] else "search results differ from the committed state"


def _run(tmp_path: Path, seed: int, n_steps: int) -> tuple[int, list[str]]:
    """Record the writes, then check a cut at every operation in both variants."""
    ops, states = _record(tmp_path, seed, n_steps)
    rng = random.Random(seed)
    reference: dict[int, tuple[dict[str, str], list[Any]]] = {}
    failures, n = [], 0
    for n, (i, variant) in enumerate(_cuts(ops, ("drop", "meta")), start=1):
        where = tmp_path / f"cut{n}"
        why = _check_cut(ops, states, i, variant, where, reference, rng)
        if why:
            op = ops[i] if i < len(ops) else None
            failures.append(
                f"cut before op {i} ({op and op.kind} {op and op.path}, step "
                f"{op and op.step}, {variant}): {why}"
            )
    return n, failures


def test_every_power_cut_recovers_the_last_durable_state(tmp_path):
    n, failures = _run(tmp_path, seed=14, n_steps=10)
    assert n >= 100, f"only {n} simulated cuts"
    assert not failures, f"{len(failures)} of {n} cuts:\n" + "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_power_cut_recovers_the_last_durable_state_slow(tmp_path, seed):
    n, failures = _run(tmp_path, seed=seed, n_steps=24)
    assert n >= 300, f"only {n} simulated cuts"
    assert not failures, f"{len(failures)} of {n} cuts:\n" + "\n".join(failures)


def test_the_simulation_finds_the_old_data_loss(tmp_path, monkeypatch):
    """The checker has teeth: with the old behaviour (synchronous=NORMAL, a rebuild deleting
    the base it replaced right after its commit, no durability barrier before deleting) some
    power cuts recover to a manifest naming a deleted base file."""
    monkeypatch.setattr(sqlite_store, "SYNCHRONOUS", "NORMAL")
    monkeypatch.setattr(writes.Writes, "_settle", lambda self: True)
    set_manifest = writes.Writes._set_manifest

    def old_rebuild(self: writes.Writes, keys: dict[str, Any]) -> None:
        if "counts" in keys and "base" in keys:  # a rebuild did not keep the replaced base
            keys = {k: v for k, v in keys.items() if k != "previous_base"}
        set_manifest(self, keys)

    monkeypatch.setattr(writes.Writes, "_set_manifest", old_rebuild)
    n, failures = _run(tmp_path, seed=14, n_steps=10)
    lost = [f for f in failures if "lost" in f or "verify" in f]
    assert lost, f"no cut of {n} lost data with the old behaviour"

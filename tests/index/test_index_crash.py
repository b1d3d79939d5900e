"""Crash safety: SIGKILL a writer at random moments; the index holds the last committed state.

After each kill the index opens, verifies, holds exactly the documents of the last
committed operation (the one before the interrupted operation, or that one if it had
committed: never a mixture), and, compacted, searches exactly like a rebuild.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash_writer import SPECS, corpus_docs, make_folder, steps

import ctxselect as cs
from ctxselect.api import retriever_for
from ctxselect.chunk import make_chunker
from ctxselect.stores.embedded import files

WRITER = Path(__file__).with_name("crash_writer.py")
QUERIES = ("alpha beta", "omega", "sigma kappa lambda", "mu mu gamma")


def _kill_at_random(ix: Path, folder: Path, seed: int, log: Path, delay: float) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(ix), str(folder), str(seed), str(log)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text().startswith("ready")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the writer did not start: {proc.communicate()[1]}")
        time.sleep(0.01)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return log.read_text().split()


def _expected(lines: list[str], seed: int, folder: Path) -> list[int]:
    """Steps whose corpus the index may hold: before the interrupted one, or after it."""
    begun = [int(v) for k, v in zip(lines[1::2], lines[2::2], strict=False) if k == "begin"]
    done = {int(v) for k, v in zip(lines[1::2], lines[2::2], strict=False) if k == "done"}
    if not begun:
        return [0]
    last = begun[-1]
    return [last + 1] if last in done else [last, last + 1]


def _states(seed: int, folder: Path, upto: int) -> list[dict[str, str]]:
    out = [{d: doc.content_hash for d, doc in corpus_docs(seed, folder, 0).items()}]
    for i, (_, _, corpus) in enumerate(steps(seed, folder)):
        if i >= upto:
            break
        out.append(corpus)
    return out


def _check(ix: Path, folder: Path, seed: int, lines: list[str]) -> None:
    report = cs.verify_index(ix)
    assert report.ok, report.problems
    allowed = _expected(lines, seed, folder)
    states = _states(seed, folder, max(allowed))
    with cs.open_index(ix) as idx:
        held = idx.store.doc_hashes()
        matches = [i for i in allowed if states[i] == held]
        assert matches, f"index holds none of the committed states {allowed} (kill in {lines[-2:]})"
        idx.search("alpha beta")  # it opens and searches
        manifest = idx.store.read_manifest()
        named = {Path(manifest["base"]["file"]).name}  # no orphans: only what it names
        if manifest.get("previous_base"):
            named.add(Path(manifest["previous_base"]).name)
        assert {p.name for p in (ix / files.ARRAYS_DIR).iterdir()} == named
        cs.compact_index(ix)
        docs = corpus_docs(seed, folder, matches[0])
        chunker = make_chunker(idx.chunk_spec)
        chunks = [c for d in docs.values() for c in chunker.chunk(d)]
        for mode in ("bm25", "tfidf"):
            want = retriever_for(chunks, mode)
            for query in QUERIES:
                assert idx.search(query, 10, mode) == want.search(query, 10), (mode, query)


def _trials(tmp_path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    folder = tmp_path / "files"
    make_folder(folder, seed)
    for trial in range(n):
        ix, log = tmp_path / f"ix{trial}", tmp_path / f"log{trial}"
        cs.index_paths([folder], ix, chunk=SPECS[0])
        lines = _kill_at_random(ix, folder, seed + trial, log, rng.uniform(0.0, 0.8))
        _check(ix, folder, seed + trial, lines)
        if trial == 0:  # the command line agrees
            out = subprocess.run(
                [sys.executable, "-m", "ctxselect", "verify", "--index", str(ix)],
                capture_output=True,
                text=True,
            )
            assert out.returncode == 0 and ": ok" in out.stdout, out.stderr


def test_sigkill_at_random_moments_leaves_the_last_committed_state(tmp_path):
    _trials(tmp_path, 20, seed=1234)


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_the_last_committed_state_slow(tmp_path):
    _trials(tmp_path, 100, seed=int(os.environ.get("CTXSELECT_CRASH_SEED", "99")))

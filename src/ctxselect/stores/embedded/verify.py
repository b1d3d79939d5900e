"""Integrity checks of an embedded index: what ``ctxselect verify`` runs.

Each check returns problem lines (empty when it passes): SQLite's own integrity check;
manifest counts and segment lists against the tables; every chunk's document exists and
its offsets fit the document and a stored text (one that is not read from the document,
see ``texts``) is the document's span; the segments' rows are exactly the live
chunks (no orphan, none missing, none twice); every array is complete and consistent.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ctxselect.errors import CtxselectError, IndexLockedError
from ctxselect.stores.embedded import files, integrity
from ctxselect.stores.embedded.lock import WriterLock

if TYPE_CHECKING:
    from ctxselect.stores.embedded.handle import StoreHandle

_SHOW = 3
# SQLite's length() and substr() stop at a NUL character: documents holding one are
# checked in Python (_nul_spans), the rest here.
HAS_NUL = "instr(CAST(d.text AS BLOB), X'00') > 0"
_SPAN_SQL = f"""
SELECT c.chunk_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE NOT {HAS_NUL} AND (c.start < 0 OR c."end" < c.start OR c."end" > length(d.text)
   OR (c.text IS NOT NULL AND substr(d.text, c.start + 1, c."end" - c.start) != c.text))
LIMIT 3
"""
_NUL_SQL = f"""
SELECT c.chunk_id, c.start, c."end", c.text, d.text FROM chunks c
JOIN documents d ON d.doc_id = c.doc_id WHERE {HAS_NUL}
"""


def _ids(rows: list[Any]) -> str:
    return ", ".join(str(r[0]) for r in rows[:_SHOW])


def _sqlite(store: StoreHandle) -> list[str]:
    found = store._conn.execute("PRAGMA integrity_check").fetchall()
    if [tuple(r) for r in found] == [("ok",)]:
        return []
    return [f"SQLite integrity check failed: {found[0][0]}"]


def _chunks(store: StoreHandle) -> list[str]:
    conn = store._conn
    problems = []
    orphans = conn.execute(
        "SELECT chunk_id FROM chunks WHERE doc_id NOT IN (SELECT doc_id FROM documents) LIMIT 3"
    ).fetchall()
    if orphans:
        problems.append(f"chunks without a document: {_ids(orphans)}")
    spans = conn.execute(_SPAN_SQL).fetchall() + _nul_spans(conn)
    if spans:
        problems.append(f"chunks whose offsets or text do not match the document: {_ids(spans)}")
    try:  # chunk texts are read from their documents: each must decode (one row at a time)
        for _ in conn.execute("SELECT text FROM documents"):
            pass
    except UnicodeDecodeError as exc:
        problems.append(f"a document's text is not valid UTF-8 ({exc.reason})")
    return problems


def _nul_spans(conn: Any) -> list[tuple[str]]:
    """The chunks of documents holding NUL whose offsets or text do not match (checked in
    Python: SQLite's text functions stop at the NUL)."""
    bad = []
    for chunk_id, start, end, text, doc_text in conn.execute(_NUL_SQL):
        if not 0 <= start <= end <= len(doc_text) or (
            text is not None and doc_text[start:end] != text
        ):
            bad.append((chunk_id,))
    return bad


def _counts(store: StoreHandle, manifest: Mapping[str, Any]) -> list[str]:
    conn = store._conn
    docs = int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    n, tokens = conn.execute("SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks").fetchone()
    actual = {"documents": docs, "chunks": int(n), "tokens": int(tokens)}
    stored = manifest.get("counts")
    if isinstance(stored, dict) and {k: stored.get(k) for k in actual} != actual:
        return [f"manifest counts {stored} differ from the tables' {actual}"]
    return []


def _postings(name: str, arrays: Mapping[str, np.ndarray], n_rows: int) -> list[str]:
    """Check one segment's raw postings: shapes, ranges, rows ascending within a term."""
    missing = [k for k in ("vocab", "indptr", "rows", "tfs", "lengths") if k not in arrays]
    if missing:
        return [f"{name} lacks the arrays {', '.join(missing)}"]
    vocab = bytes(np.asarray(arrays["vocab"], dtype=np.uint8))
    n_terms = vocab.count(b"\n") + 1 if vocab else 0
    indptr = np.asarray(arrays["indptr"], dtype=np.int64)
    rows = np.asarray(arrays["rows"], dtype=np.int64)
    ok = (
        len(indptr) == n_terms + 1
        and int(indptr[0]) == 0
        and bool(np.all(np.diff(indptr) > 0))
        and int(indptr[-1]) == len(rows) == len(arrays["tfs"])
        and len(arrays["lengths"]) == n_rows
        and (not len(rows) or (int(rows.min()) >= 0 and int(rows.max()) < n_rows))
        and np.asarray(arrays["tfs"]).dtype.kind in "iu"  # uint8 mostly; int32 before
        and bool(np.all(np.asarray(arrays["tfs"]) >= 1))
    )
    if ok and "weights" in arrays:
        ok = len(arrays["weights"]) == len(rows) and bool(np.isfinite(arrays["weights"]).all())
    if ok and len(rows) > 1:
        step = np.diff(rows)
        step[indptr[1:-1] - 1] = 1  # a new term may start at any row
        ok = bool(np.all(step > 0))
    return [] if ok else [f"{name} postings are inconsistent (sizes, ranges or order)"]


def _vectors(name: str, arrays: Mapping[str, np.ndarray], n_rows: int | None) -> list[str]:
    """Check one dense segment: a row per chunk, finite vectors, blank rows all zero."""
    missing = [k for k in ("vectors", "embedded") if k not in arrays]
    if missing:
        return [f"{name} lacks the arrays {', '.join(missing)}"]
    vectors = np.asarray(arrays["vectors"])
    embedded = np.asarray(arrays["embedded"]).astype(bool)
    ok = (
        vectors.ndim == 2
        and len(vectors) == len(embedded)
        and (n_rows is None or len(embedded) == n_rows)
        and bool(np.isfinite(vectors).all())
        and not bool(np.any(vectors[~embedded]))
    )
    return [] if ok else [f"{name} vectors are inconsistent (rows, shape or values)"]


def array_problems(
    base: Mapping[str, Mapping[str, np.ndarray]], deltas: Sequence[Mapping[str, Mapping[str, Any]]]
) -> list[str]:
    """Structural checks of every mode's base and delta arrays, vocabularies decoded: what
    opening an index without checksums runs, so damage cannot crash a search."""
    problems = []
    for mode, arrays in base.items():
        parts = [(f"the {mode} base segment", arrays)]
        parts += [
            (f"{mode} delta segment {i}", d[mode]) for i, d in enumerate(deltas, 1) if mode in d
        ]
        for name, seg in parts:
            if "vectors" in seg:
                problems += _vectors(name, seg, None)
                continue
            problems += _postings(name, seg, len(seg.get("lengths", ())))
            try:
                bytes(np.asarray(seg.get("vocab", ()), dtype=np.uint8)).decode("utf-8")
            except UnicodeDecodeError:
                problems.append(f"{name} has a vocabulary that is not UTF-8")
    return problems


def _delta_sizes(store: StoreHandle, segs: list[int]) -> list[int]:
    """Rows of each delta segment (its ``rowids``), in the manifest's order."""
    found = dict(store._conn.execute("SELECT seg, shape FROM deltas WHERE name = 'rowids'"))
    return [int(json.loads(found[seg])[0]) if seg in found else -1 for seg in segs]


def _segments(store: StoreHandle) -> list[str]:
    """The segments' rows are exactly the live chunks, and every array is consistent."""
    store.checksums = False  # the checksums are checked on their own: here, the structure
    try:
        snap = store.snapshot(eager=False)
    finally:
        store.checksums = True
    problems = []
    rowids = snap.rowids
    if len(np.unique(rowids)) != len(rowids):
        problems.append("a chunk appears in two segment rows")
    dead = {int(i) for (i,) in store._conn.execute("SELECT id FROM dead_rows")}
    present = set(rowids.tolist())
    if not dead <= present:
        problems.append(f"{len(dead - present)} deleted rows are in no segment")
    live = set(store.live_order().tolist())
    if present - dead != live:
        extra, lost = len(present - dead - live), len(live - (present - dead))
        problems.append(f"segment rows and chunks differ: {extra} orphan rows, {lost} missing")
    n_base_rows = int(snap.manifest["base"]["rows"])
    sizes = _delta_sizes(store, snap.manifest.get("segments") or [])
    for mode, seg in snap.segments.items():
        if "vectors" in seg.base:
            problems += _vectors(f"the {mode} base segment", seg.base, n_base_rows)
            if "model" not in seg.base:
                problems.append(f"the {mode} base segment does not name its model")
            if len(seg.deltas) != len(sizes):
                problems.append(f"{mode} has {len(seg.deltas)} of {len(sizes)} delta segments")
            for i, (delta, n) in enumerate(zip(seg.deltas, sizes, strict=False), 1):
                problems += _vectors(f"{mode} delta segment {i}", delta, n)
            continue
        n_base = len(seg.base.get("lengths", ()))
        problems += _postings(f"the {mode} base segment", seg.base, n_base)
        if "weights" not in seg.base:
            problems.append(f"the {mode} base segment lacks its weights")
        for i, delta in enumerate(seg.deltas, 1):
            problems += _postings(f"{mode} delta segment {i}", delta, len(delta.get("lengths", ())))
    lacking = sorted(set(snap.manifest.get("modes") or []) - set(snap.segments))
    if lacking:
        problems.append(f"modes without a base segment: {', '.join(lacking)}")
    return problems


def _checksums(store: StoreHandle, manifest: Mapping[str, Any]) -> list[str]:
    """Every stored checksum against the bytes: the base file (always re-read here), the
    delta segments, dead rows and dead terms."""
    problems = []
    stored = manifest.get("checksums")
    base = manifest.get("base")
    if isinstance(base, dict) and "crc32" in base:
        path = store.folder / str(base["file"])
        try:
            if integrity.stream_crc(path) != base["crc32"]:
                problems.append(f"{path} does not match the checksum in the manifest")
        except OSError as exc:
            problems.append(f"{path} cannot be read ({exc})")
    if isinstance(stored, dict):
        actual = integrity.table_checksums(store._conn)
        live = {str(s) for s in manifest.get("segments") or []}
        actual["deltas"] = {k: v for k, v in actual["deltas"].items() if k in live}
        for key, value in actual.items():
            if stored.get(key) != value:
                problems.append(f"{key.replace('_', ' ')} do not match their checksum")
    try:
        found = store._conn.execute(integrity.CHUNK_DIGEST_SQL)
        integrity.check_chunks(store.folder, manifest, found)
    except CtxselectError as exc:
        problems.append(str(exc))
    return problems


def checksum_note(manifest: Mapping[str, Any]) -> str | None:
    """Say which checksums an index lacks (written by an older ctxselect), or None."""
    base = manifest.get("base")
    lacking = [] if "checksums" in manifest else ["manifest and segments"]
    if isinstance(base, dict) and "crc32" not in base:
        lacking.append("base file")
    if not lacking:
        return None
    return (
        f"checksums absent ({', '.join(lacking)}): written by an older ctxselect; "
        f"`ctxselect compact` adds them"
    )


def _structure(store: StoreHandle) -> list[str]:
    """The segment checks; arrays too damaged to be read at all are a problem, not a crash."""
    try:
        return _segments(store)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        return [f"segments cannot be read ({type(exc).__name__}: {exc})"]


def _leftovers(store: StoreHandle, remove: bool) -> tuple[bool, list[str]]:
    """Whether a writer may be running, and the files of interrupted writes removed (only
    when ``remove`` and no writer runs: a running writer's new files are not leftovers)."""
    if store.readonly:
        return False, []
    try:
        with WriterLock(store.folder):
            return False, store.remove_orphans() if remove else []
    except (IndexLockedError, OSError):  # busy, or the lock file cannot be made (disk full)
        return True, []


def verify_store(store: StoreHandle) -> tuple[list[str], list[str], list[str]]:
    """Run every check; return (checks run, problems, leftover files removed).

    The checks read one committed generation (a read transaction), so a writer
    committing meanwhile is never seen half-way.
    """
    try:
        with store.reading():
            done, problems = _checks(store)
    except sqlite3.DatabaseError as exc:  # the read transaction itself failed: damage
        return ["sqlite integrity"], [f"sqlite integrity: {exc}"], []
    # Delete nothing unless the manifest was read, is valid, and the index is sound.
    writing, removed = _leftovers(store, remove=not problems)
    done.append(_leftover_note(store, problems))
    if not writing:
        for path in sorted((store.folder / files.ARRAYS_DIR).glob("*.tmp")):
            if f"{files.ARRAYS_DIR}/{path.name}" not in files.foreign_files(store.folder):
                problems.append(f"stray temporary file {path}")
    return done, problems, removed


def _checks(store: StoreHandle) -> tuple[list[str], list[str]]:
    """Every check of the tables and segments: (checks run, problems)."""
    checks: list[tuple[str, Callable[[], list[str]]]] = [
        ("sqlite integrity", lambda: _sqlite(store)),
        ("chunks and documents", lambda: _chunks(store)),
    ]
    done, problems = [], []
    for name, check in checks:
        try:
            problems += check()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            problems.append(f"{name}: {exc}")
        done.append(name)
        if problems and name == "sqlite integrity":
            return done, problems
    stage = "manifest"
    try:
        manifest = store.read_manifest()
        stage = "counts"
        done.append("manifest")
        done.append("counts")
        problems += _counts(store, manifest)
        note = checksum_note(manifest)
        stage = "checksums"
        done.append("checksums" if note is None else f"checksums ({note})")
        problems += _checksums(store, manifest)
        stage = "segments"
        done.append("segments")
        if isinstance(manifest.get("base"), dict):
            problems += _structure(store)
        elif int((manifest.get("counts") or {}).get("chunks", 0)):
            problems.append("the index holds chunks but no base segment")
    except (CtxselectError, sqlite3.DatabaseError, UnicodeDecodeError, OSError) as exc:
        problems.append(f"{stage}: {exc}")
    return done, problems


def _leftover_note(store: StoreHandle, problems: list[str]) -> str:
    """The leftover check's line: files under ``arrays/`` ctxselect did not write are
    named and kept (they may be the user's), never deleted."""
    note = "leftover files"
    if problems:
        note += " (none removed: the index has problems)"
    foreign = files.foreign_files(store.folder)
    if foreign:
        shown = ", ".join(foreign[:_SHOW]) + (", ..." if len(foreign) > _SHOW else "")
        note += (
            f" ({len(foreign)} file(s) not written by ctxselect kept: {shown}; move them out "
            f"of {store.folder / files.ARRAYS_DIR} if they are yours)"
        )
    return note

"""Checksums and manifest checks: a damaged index is an error, never a wrong answer.

What is covered, and where it is checked:

- **The manifest** (settings, counts, the base file's layout offsets): its rows are parsed
  as JSON and their shape checked on every read (:func:`parse_manifest`), and a CRC-32 of
  all of them (the ``checksum`` row) is compared on every read. Every commit re-seals it
  in the same SQLite transaction (:func:`seal`).
- **The base file** (``arrays/*.bin``): its CRC-32 is stored in the manifest (``base.crc32``)
  and checked the first time a process maps that file (:func:`check_file`): zlib's CRC-32
  runs at several GB/s, so a 300 MB base costs ~0.1 s once per process.
- **Delta segments, dead rows, dead terms** (SQLite rows the ranking reads): a CRC-32 of
  each is stored in the manifest (``checksums``) and recomputed by every snapshot, which
  reads all of them anyway.
- **Chunk rows** (what a hit shows: ids, offsets, token count, text, header): a sum of
  per-row CRC-32s (``chunks_digest``) that each commit updates by what it deletes and
  inserts. The text it covers is the text a hit shows: the stored one, or the document's
  span it is read from (``texts``), so damage to a document's text inside a chunk is
  caught too. An index small enough to hold its texts in memory checks it when it loads
  them; a larger one reads texts per hit and leaves the check to ``verify`` (a full pass
  over the corpus per open would cost more than the search). ``verify`` also runs
  SQLite's integrity check and compares each stored chunk text with its document's span.
- **Writes** check the stored checksums before they change anything: a commit re-seals,
  so it must never build on rows that changed since the last one.

Indexes written before checksums existed have no ``checksum`` row: they stay readable and
``verify`` says so.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ctxselect.errors import IndexCorruptError
from ctxselect.stores.embedded import disk, texts
from ctxselect.types import Chunk

CHECKSUM_KEY = "checksum"
_CHECKED: set[tuple[str, int, int, int, int]] = set()
_CHECKED_LOCK = threading.Lock()


def damaged(folder: Path, what: object, why: str) -> IndexCorruptError:
    """The one-line error for a damaged index: what, why, and the commands that fix it.

    A damaged array file (a base or delta segment) is rebuilt in place from the index's
    roots, as ``index`` and ``verify`` say, keeping tuning and cached vectors; damage in
    ``index.sqlite`` (the roots, documents and manifest) needs a new index.
    """
    if Path(str(what)).parent == Path(folder) / disk.ARRAYS_DIR:
        where = shlex.quote(str(folder))
        return IndexCorruptError(
            f"{what} is damaged ({why}): rebuild it in place from the index's roots with "
            f"`ctxselect index --rebuild --index {where}` (cached vectors are reused)"
        )
    return IndexCorruptError(
        f"{what} is damaged ({why}): run `ctxselect verify --index {folder}`, then rebuild "
        f"the index with `rm -r {folder} && ctxselect index PATH... --index {folder}`"
    )


# -- the manifest -----------------------------------------------------------------------


def manifest_crc(rows: Iterable[tuple[str, str]]) -> int:
    """CRC-32 of the manifest rows (key and raw JSON text), the checksum row excluded."""
    crc = 0
    # str(): a flipped bit can turn a stored value into NULL; the CRC then differs
    for key, value in sorted(rows, key=lambda r: (str(r[0]), str(r[1]))):
        if key != CHECKSUM_KEY:
            crc = zlib.crc32(f"{key}\0{value}\0".encode("utf-8", "surrogatepass"), crc)
    return crc


def parse_manifest(rows: list[tuple[str, str]], folder: Path) -> dict[str, Any]:
    """Decode and check the manifest rows of the index in ``folder``.

    Raises:
        IndexCorruptError: A value is not JSON, a key the readers use has the wrong
            shape, or the manifest's checksum does not match its rows.
    """
    where = folder / "index.sqlite"
    manifest: dict[str, Any] = {}
    for key, value in rows:
        try:
            manifest[key] = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise damaged(folder, where, f"manifest value {key!r} is not valid JSON") from exc
    stored = manifest.pop(CHECKSUM_KEY, None)
    if stored is not None and stored != manifest_crc(rows):
        raise damaged(folder, where, "the manifest does not match its checksum")
    problem = shape_problem(manifest)
    if problem:
        raise damaged(folder, where, f"manifest {problem}")
    return manifest


def _is_int(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _base_problem(base: Any) -> str | None:
    if base is None:
        return None
    if not isinstance(base, dict):
        return "'base' is not an object"
    rel = base.get("file")
    if not isinstance(rel, str) or not rel.startswith("arrays/") or ".." in rel:
        return "'base.file' is not a file under arrays/"
    if not _is_int(base.get("rows")) or ("crc32" in base and not _is_int(base["crc32"])):
        return "'base.rows' or 'base.crc32' is not a count"
    layout, arrays = base.get("layout"), base.get("arrays")
    if not isinstance(layout, dict) or not isinstance(arrays, dict):
        return "'base' lacks its layout"
    for spec in layout.values():
        ok = isinstance(spec, list) and len(spec) == 3 and isinstance(spec[0], str)
        if not ok or not isinstance(spec[1], list) or not all(_is_int(n) for n in spec[1]):
            return "'base.layout' has an invalid entry"
        if not _is_int(spec[2]):
            return "'base.layout' has an invalid offset"
    names = [base.get("rowids")]
    for named in arrays.values():
        if not isinstance(named, dict):
            return "'base.arrays' has an invalid entry"
        names += list(named.values())
    if any(name not in layout for name in names):
        return "'base' names an array its layout lacks"
    return None


def shape_problem(manifest: Mapping[str, Any]) -> str | None:
    """Say what is wrong with the keys readers rely on (None: nothing)."""
    checks = {
        "schema_version": lambda v: _is_int(v, 1),
        "generation": _is_int,
        "segments": lambda v: isinstance(v, list) and all(_is_int(s, 1) for s in v),
        "counts": lambda v: isinstance(v, dict) and all(_is_int(n) for n in v.values()),
        "pending": lambda v: isinstance(v, dict) and all(_is_int(n) for n in v.values()),
        "modes": lambda v: isinstance(v, list) and all(isinstance(m, str) for m in v),
        "roots": lambda v: isinstance(v, list) and all(isinstance(r, str) for r in v),
        "previous_base": lambda v: v is None or isinstance(v, str),
        "checksums": lambda v: isinstance(v, dict),
        CHUNK_DIGEST_KEY: _is_int,
    }
    for key, ok in checks.items():
        if key in manifest and not ok(manifest[key]):
            return f"key {key!r} has an invalid value"
    return _base_problem(manifest.get("base"))


# -- SQLite rows the ranking reads --------------------------------------------------------


def delta_crc(rows: Iterable[tuple[str, str, str, bytes]]) -> int:
    """CRC-32 of one delta segment's rows (name, dtype, shape, data), sorted by name."""
    crc = 0
    for name, dtype, shape, data in sorted(rows, key=lambda r: str(r[0])):
        crc = zlib.crc32(f"{name}\0{dtype}\0{shape}\0".encode("utf-8", "surrogatepass"), crc)
        raw = data if isinstance(data, bytes) else str(data).encode("utf-8", "surrogatepass")
        crc = zlib.crc32(raw, crc)
    return crc


def dead_rows_crc(ids: Iterable[int]) -> int:
    """CRC-32 of the dead row ids, ascending."""
    return zlib.crc32(",".join(str(i) for i in sorted(ids, key=str)).encode())


def dead_terms_crc(rows: Iterable[tuple[str, str, int]]) -> int:
    """CRC-32 of the dead terms (mode, term, count), sorted."""
    text = "\n".join(f"{m}\t{t}\t{c}" for m, t, c in sorted(rows, key=str))
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def table_checksums(conn: sqlite3.Connection) -> dict[str, Any]:
    """Checksums of the delta segments, dead rows and dead terms, as stored in the manifest."""
    per_seg: dict[int, list[tuple[str, str, str, bytes]]] = {}
    for seg, name, dtype, shape, data in conn.execute("SELECT * FROM deltas"):
        per_seg.setdefault(int(seg), []).append((name, dtype, shape, data))
    dead = (i for (i,) in conn.execute("SELECT id FROM dead_rows"))
    terms = conn.execute("SELECT mode, term, count FROM dead_terms")
    return {
        "deltas": {str(seg): delta_crc(rows) for seg, rows in sorted(per_seg.items())},
        "dead_rows": dead_rows_crc(dead),
        "dead_terms": dead_terms_crc(terms),
    }


def seal(conn: sqlite3.Connection) -> None:
    """Store the table checksums and the manifest's checksum (inside the commit's
    transaction, after every other change of it)."""
    conn.execute(
        "INSERT OR REPLACE INTO manifest VALUES ('checksums', ?)",
        (json.dumps(table_checksums(conn)),),
    )
    rows = conn.execute("SELECT key, value FROM manifest").fetchall()
    conn.execute(
        "INSERT OR REPLACE INTO manifest VALUES (?, ?)", (CHECKSUM_KEY, str(manifest_crc(rows)))
    )


def check_stored(conn: sqlite3.Connection, folder: Path) -> None:
    """Check the manifest and the table checksums as committed (a writer, before it
    changes anything: a commit re-seals, so it must not build on damaged rows).

    Raises:
        IndexCorruptError: The manifest or a delta, dead rows or dead terms table is damaged.
    """
    manifest = parse_manifest(conn.execute("SELECT key, value FROM manifest").fetchall(), folder)
    stored = manifest.get("checksums")
    if isinstance(stored, dict) and table_checksums(conn) != stored:
        raise damaged(folder, folder / "index.sqlite", "a table does not match its checksum")


def check_tables(
    folder: Path, manifest: Mapping[str, Any], found: Mapping[str, Any], what: str
) -> None:
    """Compare checksums computed from the rows read with the manifest's.

    Raises:
        IndexCorruptError: One differs (``what`` names the file).
    """
    stored = manifest.get("checksums")
    if not isinstance(stored, dict):
        return  # written before checksums
    for key in ("dead_rows", "dead_terms"):
        if key in found and stored.get(key) != found[key]:
            raise damaged(folder, what, f"the {key.replace('_', ' ')} do not match their checksum")
    deltas = stored.get("deltas") or {}
    for seg, crc in found.get("deltas", {}).items():
        if deltas.get(seg) != crc:
            raise damaged(folder, what, f"delta segment {seg} does not match its checksum")


# -- files -------------------------------------------------------------------------------


def stream_crc(path: Path, block: int = 1 << 22) -> int:
    """CRC-32 of a file read in blocks (``verify``: no mapping kept, little memory)."""
    crc = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            crc = zlib.crc32(chunk, crc)
    return crc


def check_file(folder: Path, path: Path, expected: Any) -> None:
    """Check a base file's CRC-32 once per process (per file, size and mtime).

    The file is read in blocks (:func:`stream_crc`), not through the reader's memory map:
    summing the map would make every page of it resident in the process (a 1M-chunk
    index's querying process went from about 340 to about 980 MB), where a search only
    touches the pages of the terms it reads.

    Args:
        folder: The index folder (named in the error).
        path: The file.
        expected: The manifest's checksum; None for a file written before checksums.

    Raises:
        IndexCorruptError: The bytes do not match the manifest's checksum.
    """
    if expected is None:
        return  # written before checksums
    st = os.stat(path)
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, int(expected))
    with _CHECKED_LOCK:
        if key in _CHECKED:
            return
    if stream_crc(path) != expected:
        raise damaged(folder, path, "its bytes do not match the checksum in the manifest")
    with _CHECKED_LOCK:
        _CHECKED.add(key)


# -- chunk rows ---------------------------------------------------------------------------

CHUNK_DIGEST_KEY = "chunks_digest"
# id, chunk_id, doc_id, start, end, n_tokens, text (as read: see ``texts``), header
CHUNK_DIGEST_SQL = (
    f'SELECT c.id, c.chunk_id, c.doc_id, c.start, c."end", c.n_tokens, {texts.TEXT}, '
    f"c.header FROM {texts.FROM}"
)
_MOD = 1 << 64


def chunks_digest(rows: Iterable[tuple[Any, ...]]) -> int:
    """Sum (mod 2**64) of each chunk row's CRC-32: ``CHUNK_DIGEST_SQL``, what a hit shows.

    A sum, so a commit updates it by what it deletes and inserts (never a corpus scan);
    a change in one row changes its CRC and so the sum.
    """
    total = 0
    for row in rows:
        text = "\x1f".join(str(v) for v in row)
        total += zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return total % _MOD


_RAW_DIGEST_SQL = 'SELECT id, chunk_id, doc_id, start, "end", n_tokens, text, header FROM chunks'
_RAW_DIGEST_LAYOUT = texts.Layout(ident=1, doc=2, start=3, end=4, text=6)


def digest_of_docs(conn: sqlite3.Connection, doc_ids: Iterable[str], folder: Path) -> int:
    """The chunk digest of the chunks of ``doc_ids`` (before a commit deletes them): the
    rows :data:`CHUNK_DIGEST_SQL` gives, each document read once rather than per chunk."""
    ids = list(dict.fromkeys(doc_ids))
    total = 0
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        marks = ",".join("?" * len(part))
        rows = conn.execute(f"{_RAW_DIGEST_SQL} WHERE doc_id IN ({marks})", part)
        total += chunks_digest(texts.filled(conn, rows, _RAW_DIGEST_LAYOUT, folder, strict=False))
    return total % _MOD


def digest_of_chunks(ids: Iterable[int], chunks: Iterable[Chunk]) -> int:
    """The chunk digest of ``chunks`` stored under row ids ``ids`` (computed from the values
    a commit inserts, so a million-chunk build never reads its texts back)."""
    return chunks_digest(
        (i, c.chunk_id, c.doc_id, c.start, c.end, c.n_tokens, c.text, c.header)
        for i, c in zip(ids, chunks, strict=True)
    )


def digest_all(conn: sqlite3.Connection) -> int:
    """The chunk digest of every chunk row as stored (a full scan)."""
    return chunks_digest(conn.execute(CHUNK_DIGEST_SQL))


def digest_after(conn: sqlite3.Connection, before: Any, gone: int, new: int, rebuild: bool) -> int:
    """The chunk digest after a commit: ``before`` minus what went (``gone``) plus the new
    rows' digest (``new``); a rebuild's is ``new``, an index without one gets a full scan."""
    if rebuild:
        return new % _MOD
    if not _is_int(before):
        return digest_all(conn)
    return (before - gone + new) % _MOD


def check_chunks(
    folder: Path, manifest: Mapping[str, Any], rows: Iterable[tuple[Any, ...]]
) -> None:
    """Compare every live chunk row (read in full) with the manifest's digest.

    Raises:
        IndexCorruptError: A chunk row changed since its commit.
    """
    expected = manifest.get(CHUNK_DIGEST_KEY)
    if _is_int(expected) and chunks_digest(rows) != expected:
        raise damaged(
            folder, folder / "index.sqlite", "a chunk row does not match the chunk checksum"
        )

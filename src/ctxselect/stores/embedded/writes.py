"""The write half of :class:`~ctxselect.stores.embedded.sqlite.SQLiteStore`.

Three commits, each one SQLite transaction (the caller holds the writer lock):

- ``commit_update``: documents and chunks in and out, plus a small delta segment holding
  the new rows' postings (BLOBs), the deleted rows and their terms; or, with
  ``rebuild``, a whole new base (full build, changed settings).
- ``commit_base``: compaction; a new base replaces the base and every delta.
- ``commit_deltas``: the delta segments merged into one (searches read fewer pieces).

Big arrays go to a base file before the transaction, fsynced with its directory, and
become part of the index only when the manifest naming them commits. Every commit is
synchronous=FULL (durable when it returns); a replaced base is kept as ``previous_base``
and older files are deleted only after a durable commit that no longer names them, so a
power cut never leaves a manifest naming a deleted file.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from ctxselect.errors import IndexCorruptError, IndexWriteError
from ctxselect.stores.base import ModeArrays
from ctxselect.stores.embedded import base_check, disk, fields, files, integrity, pages, texts
from ctxselect.types import Chunk, Document

_COMMITS = [0]  # commits made by this process: open indexes compare it to reload at once


def local_commits() -> int:
    """Return how many commits this process has made to any index (cheap to poll)."""
    return _COMMITS[0]


def _blob(array: np.ndarray) -> tuple[str, str, bytes]:
    a = np.ascontiguousarray(array)
    return a.dtype.str, json.dumps(a.shape), a.tobytes()


class Writes:
    """Commits of an index folder (mixed into SQLiteStore)."""

    folder: Path
    path: Path
    _conn: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[None]:
        """Provided by the store."""
        raise NotImplementedError

    def read_manifest(self) -> dict[str, Any]:
        """Provided by the store."""
        raise NotImplementedError

    def upgrade_for_writing(self) -> None:
        """Provided by the store."""
        raise NotImplementedError

    # -- commits -----------------------------------------------------------------------

    def commit_update(
        self,
        *,
        documents: Sequence[Document],
        chunks: Sequence[Chunk],
        removed: Sequence[str],
        arrays: ModeArrays,
        dead_terms: Mapping[str, Mapping[str, int]],
        manifest: Mapping[str, Any],
        rebuild: bool = False,
    ) -> int:
        """Store documents and chunks with their segment, and delete ``removed``.

        Args:
            documents: Documents to insert or replace (their old chunks are deleted).
            chunks: The new chunks, in the row order of ``arrays``.
            removed: Ids of documents to delete with their chunks.
            arrays: Per mode: raw postings of ``chunks`` (a delta segment), or with
                ``rebuild`` the full base arrays.
            dead_terms: Per mode: term -> number of deleted chunks holding it.
            manifest: Manifest keys to set (settings, roots, timestamps).
            rebuild: Replace every chunk and the base (full build); else add a delta.

        Returns:
            The new generation.
        """
        self.upgrade_for_writing()  # before the generation is read: the upgrade is one
        current = self.read_manifest()
        generation = int(current.get("generation", 0)) + 1
        if generation == 1:  # the first commit: large pages if it brings much text
            pages.fit(self._conn, documents)
        replaced = current.get("base")
        seq = self._sequence()
        new_ids = np.arange(seq + 1, seq + 1 + len(chunks), dtype=np.int64)
        base = self._write_base(generation, arrays, new_ids) if rebuild else None
        with self._committing(tidy=True, on_base=not rebuild):
            doomed = [*removed, *(d.doc_id for d in documents)]
            gone = 0 if rebuild else integrity.digest_of_docs(self._conn, doomed, self.folder)
            counts, n_dead = self._apply(documents, chunks, removed, rebuild, current)
            if self._sequence() != seq + len(chunks):
                raise IndexWriteError(f"chunk ids of {self.folder} moved during a write")
            keys: dict[str, Any] = {**manifest, "generation": generation, "counts": counts}
            new = integrity.digest_of_chunks(new_ids.tolist(), chunks)
            keys[integrity.CHUNK_DIGEST_KEY] = integrity.digest_after(
                self._conn, current.get(integrity.CHUNK_DIGEST_KEY), gone, new, rebuild
            )
            if rebuild:
                self._clear_changes()
                keys.update(base=base, segments=[], pending=_pending({}, 0, 0))
                # like compaction: the replaced base stays for readers of the last manifest
                keys["previous_base"] = _file_of(replaced)
            else:
                keys["pending"] = _pending(current, len(chunks), n_dead)
                segments = list(current.get("segments", []))
                if len(chunks):
                    segments.append(self._insert_delta(arrays, new_ids))
                self._add_dead_terms(dead_terms)
                keys["segments"] = segments
            self._set_manifest(keys)
        return generation

    def commit_base(
        self,
        *,
        arrays: ModeArrays,
        rowids: np.ndarray,
        expected_generation: int,
        manifest: Mapping[str, Any],
    ) -> int:
        """Replace the base and every delta with one new base (compaction)."""
        generation = expected_generation + 1
        replaced = self.read_manifest().get("base")
        base = self._write_base(generation, arrays, rowids)
        # The replaced base stays on disk for one more compaction: a reader that read the
        # previous manifest may still be about to map it.
        previous = _file_of(replaced)
        with self._committing(tidy=True):
            self._expect(expected_generation)
            self._clear_changes()
            self._set_manifest(
                {
                    **manifest,
                    "generation": generation,
                    "base": base,
                    "previous_base": previous,
                    "segments": [],
                }
            )
        return generation

    def commit_deltas(
        self, *, arrays: ModeArrays, rowids: np.ndarray, expected_generation: int
    ) -> int:
        """Replace every delta segment with one holding all of their rows, in order."""
        with self._committing(tidy=False, on_base=True):
            self._expect(expected_generation)
            self._conn.execute("DELETE FROM deltas")
            seg = self._insert_delta(arrays, rowids)
            keys = {"generation": expected_generation + 1, "segments": [seg]}
            self._set_manifest(keys)
        return expected_generation + 1

    def commit_settings(self, keys: Mapping[str, Any]) -> int:
        """Set manifest keys that change how the index is searched (no segment changes),
        as a new generation, so every open index reloads them; return it."""
        with self._committing(tidy=False):
            current = self.read_manifest()
            generation = int(current.get("generation", 0)) + 1
            self._set_manifest({**keys, "generation": generation})
        return generation

    def check_base(self) -> None:
        """Refuse a write that builds on the committed base file when it is damaged
        (cheap when the file is as written: see ``base_check``)."""
        base_check.check_base(self.folder, self.read_manifest())

    def remove_orphans(self, *, durable: bool = False) -> list[str]:
        """Delete base files the committed manifest does not name (writer lock held).

        The current base and the one it replaced are kept. A file is deleted only once
        the manifest that stopped naming it survives a power cut: ``durable`` says the
        caller just made a synchronous=FULL commit; otherwise a checkpoint must first copy
        every commit into the database file (if readers prevent that, nothing is deleted
        and the next writer tries again).
        """
        manifest = self.read_manifest()
        base = manifest.get("base")
        keep = {str(base["file"])} if isinstance(base, dict) else set()
        if manifest.get("previous_base"):
            keep.add(str(manifest["previous_base"]))
        if not durable and not self._settle():
            return []
        return files.remove_orphans(self.folder, keep)

    def _settle(self) -> bool:
        """Make every commit durable with a checkpoint; False if readers kept it partial.

        A checkpoint syncs the WAL before copying it and the database file after, so once
        it copied every frame, no commit read so far can roll back (SQLite's WAL docs).
        """
        busy, log, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if busy or log != copied:
            return False
        disk.current().committed(self._conn, self.path, durable=True)
        return True

    @contextlib.contextmanager
    def _committing(self, *, tidy: bool, on_base: bool = False) -> Iterator[None]:
        """One commit's transaction: a failure becomes a one-line IndexWriteError; open
        indexes of this process are told to reload; with ``tidy``, leftover base files
        are removed afterwards; ``on_base``: the commit keeps the base, which must be whole."""
        durable = False
        self.upgrade_for_writing()  # an older schema is never written as it is
        try:
            with self.transaction():
                # never build on rows that changed since their commit (it would re-seal them)
                integrity.check_stored(self._conn, self.folder)
                if on_base:
                    self.check_base()
                yield
            # FULL (2) or EXTRA (3) in WAL mode: the commit survives a power cut
            level = self._conn.execute("PRAGMA synchronous").fetchone()[0]
            durable = not self._conn.in_transaction and int(level) >= 2
        except (sqlite3.DatabaseError, OSError) as exc:
            raise files.write_error(self.folder, exc) from exc
        finally:
            if tidy:
                self._tidy(durable)
            else:
                _COMMITS[0] += 1

    def _tidy(self, durable: bool) -> None:
        """Remove leftovers after a commit or a failed one; never hide the real error."""
        _COMMITS[0] += 1
        # A failure here must not hide the real error; the next writer removes leftovers.
        with contextlib.suppress(sqlite3.DatabaseError, OSError, IndexCorruptError):
            self.remove_orphans(durable=durable)

    # -- pieces ------------------------------------------------------------------------

    def _write_base(
        self, generation: int, arrays: ModeArrays, rowids: np.ndarray
    ) -> dict[str, Any]:
        return files.write_base(self.folder, files.new_base_name(generation), arrays, rowids)

    def _sequence(self) -> int:
        row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'")
        found = row.fetchone()
        return int(found[0]) if found else 0

    def _expect(self, generation: int) -> None:
        row = self._conn.execute("SELECT value FROM manifest WHERE key = 'generation'")
        found = row.fetchone()
        if (int(json.loads(found[0])) if found else 0) != generation:
            raise IndexWriteError(
                f"index {self.folder} changed while it was being compacted: run the command again"
            )

    def _apply(
        self,
        documents: Sequence[Document],
        chunks: Sequence[Chunk],
        removed: Sequence[str],
        rebuild: bool,
        current: Mapping[str, Any],
    ) -> tuple[dict[str, int], int]:
        """Delete and insert documents and chunks; return the new counts and dead rows.

        Counts change by what this commit deletes and inserts, so an update never scans
        the chunk table (an O(corpus) step at a million chunks).
        """
        doomed = list(dict.fromkeys([*removed, *(d.doc_id for d in documents)]))
        conn = self._conn
        before = current.get("counts") if not rebuild else None
        if rebuild:
            conn.execute("DELETE FROM chunks")
            dead: list[tuple[int, int]] = []
        else:
            sql = "SELECT id, n_tokens FROM chunks WHERE doc_id IN ({})"
            dead = [r for p in _parts(doomed) for r in conn.execute(sql.format(_marks(p)), p)]
            conn.executemany("INSERT INTO dead_rows VALUES (?)", [(i,) for i, _ in dead])
            conn.executemany("DELETE FROM chunks WHERE doc_id = ?", [(d,) for d in doomed])
        # one executemany (rowcount adds up its deletions): a rebuild names every document
        gone = conn.executemany("DELETE FROM documents WHERE doc_id = ?", [(d,) for d in doomed])
        gone_docs = max(gone.rowcount, 0)
        conn.executemany(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
            [(d.doc_id, d.source, d.kind, d.title, d.content_hash, d.text) for d in documents],
        )
        if rebuild:
            conn.execute("DELETE FROM doc_fields")
        else:
            fields.delete(conn, doomed)
        fields.write(conn, documents)
        # a chunk that is its document's span stores NULL, not a second copy (``texts``)
        stored = texts.stored_texts(chunks, {d.doc_id: d.text for d in documents})
        conn.executemany(
            'INSERT INTO chunks (chunk_id, doc_id, ordinal, start, "end", text, header, '
            "n_tokens, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    c.chunk_id,
                    c.doc_id,
                    c.ordinal,
                    c.start,
                    c.end,
                    text,
                    c.header,
                    c.n_tokens,
                    c.parent_id,
                )
                for c, text in zip(chunks, stored, strict=True)
            ),
        )
        new_tokens = sum(c.n_tokens for c in chunks)
        if not isinstance(before, dict) or not {"documents", "chunks", "tokens"} <= set(before):
            docs = int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
            n, tokens = conn.execute(
                "SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks"
            ).fetchone()
            return {"documents": docs, "chunks": int(n), "tokens": int(tokens)}, len(dead)
        counts = {
            "documents": int(before["documents"]) + len(documents) - gone_docs,
            "chunks": int(before["chunks"]) + len(chunks) - len(dead),
            "tokens": int(before["tokens"]) + new_tokens - sum(t for _, t in dead),
        }
        return counts, len(dead)

    def _clear_changes(self) -> None:
        for table in ("deltas", "dead_rows", "dead_terms"):
            self._conn.execute(f"DELETE FROM {table}")

    def _insert_delta(self, arrays: ModeArrays, rowids: np.ndarray) -> int:
        seg = int(self._conn.execute("SELECT coalesce(max(seg), 0) + 1 FROM deltas").fetchone()[0])
        rows = [(seg, "rowids", *_blob(np.asarray(rowids, dtype=np.int64)))]
        rows += [
            (seg, f"{mode}/{name}", *_blob(array))
            for mode, named in arrays.items()
            for name, array in named.items()
        ]
        self._conn.executemany("INSERT INTO deltas VALUES (?, ?, ?, ?, ?)", rows)
        return seg

    def _add_dead_terms(self, dead_terms: Mapping[str, Mapping[str, int]]) -> None:
        self._conn.executemany(
            "INSERT INTO dead_terms VALUES (?, ?, ?) ON CONFLICT (mode, term) "
            "DO UPDATE SET count = count + excluded.count",
            [(mode, t, c) for mode, terms in dead_terms.items() for t, c in terms.items()],
        )

    def _set_manifest(self, keys: Mapping[str, Any]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO manifest VALUES (?, ?)",
            [(k, json.dumps(v)) for k, v in keys.items() if k != "schema_version"],
        )
        integrity.seal(self._conn)  # last step of every commit: checksums of what it left

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Upsert manifest keys outside any segment change (schema_version is kept)."""
        self.upgrade_for_writing()
        with self.transaction():
            self._set_manifest(manifest)


def _file_of(base: Any) -> str | None:
    """The file a manifest's ``base`` entry names (None for an index without one)."""
    return str(base["file"]) if isinstance(base, dict) else None


def _pending(current: Mapping[str, Any], added: int, dead: int) -> dict[str, int]:
    """Rows since the last compaction: delta rows written and rows deleted."""
    before = current.get("pending") or {}
    return {
        "delta_rows": int(before.get("delta_rows", 0)) + added,
        "dead_rows": int(before.get("dead_rows", 0)) + dead,
    }


def _parts(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _marks(part: Sequence[Any]) -> str:
    return ",".join("?" * len(part))

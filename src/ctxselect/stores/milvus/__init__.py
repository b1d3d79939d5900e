"""The Milvus store: an index in a Milvus server, opened as ``milvus://HOST:PORT/NAME``.

Install ``ctxselect[milvus]``; ``python -m ctxselect.stores.milvus.server DIR`` runs a
local Milvus Lite 2.5.1 server to try it (docs/14-milvus.md). Everything lives in the
server (collections ``NAME``, ``NAME__meta`` and ``NAME__denseDIM``; see ``schemas``), so
the URI is the whole index and nothing is kept on the client machine.

Design (how the :class:`~ctxselect.stores.Store` promises are kept):

- **Generations.** Rows are immutable and tagged ``born = N``, the generation whose
  commit wrote them; a removal is a ``tomb`` row (``born = N``) naming the removed row.
  A commit writes all of its rows, then its manifest, then one ``head`` row: the newest
  head is the committed generation G, and a reader of G sees rows born at or before G
  minus rows tombstoned at or before G. Each head is one insert, so a commit is atomic
  to readers; collections use Strong consistency, so every query sees every write
  acknowledged before it. ``reading()`` pins G for the thread.
- **Leftovers.** Rows of a generation without a head (a writer killed or failing before
  its head row) are invisible; the next commit, and ``verify`` when no writer holds the
  lease, delete them, so a re-run never duplicates chunks.
- **Old generations.** A compaction (or full rebuild) at N whose previous base was
  written at P deletes what only generations before P see (tombstoned rows and their
  tombs, older arrays, manifests and heads), as the embedded store keeps the previous
  base file: a reader pinned further back than that may find rows gone.
- **Segments and the manifest.** The mode arrays (``ModeArrays``) of the base and each
  delta are ``.npy``-like bytes in base64 pieces (``blob`` rows, grouped ``base/G`` and
  ``delta/S``), the deleted terms a JSON blob, the manifest JSON pieces per generation.
  Searches load them as the embedded store's (client-side ranking), each array on
  first use; the chunk collection also feeds a BM25 function on a sparse field, and
  ``NAME__denseDIM`` holds vectors with a second BM25 field, for server-side ``bm25``,
  ``dense`` and ``hybrid`` (``serving``).
- **Identity.** The layout row holds a random id written when the index is created;
  ``replaced()`` compares it, since an index dropped and built again under the same NAME
  restarts at generation 1 (``layout``).
- **Writer lock.** Milvus has no locks: a lease row (owner, expiry) re-checked and
  renewed before every commit row; see ``lease`` for its limits.
- **Data.** Chunk text, offsets, header, token count and parent per chunk row (a text
  over 64 KB is read back from its document, which is kept in 16,000-character pieces);
  documents with title, source, kind and content hash; vectors by model and content hash
  (``vectors``); counts in the manifest; ``disk_bytes`` is an estimate (the bytes sent
  for live rows and arrays), since Milvus reports no size per collection.
"""

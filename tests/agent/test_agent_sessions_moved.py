"""A chunk that only moved is not sent twice; a chunk whose text changed is.

A coding agent edits a file between calls (a line added at the top, say). Before, every
chunk of that file after the edit had new offsets, so the session counted all of them as
new and re-sent text the agent already held. A session now knows a chunk by its
document and its exact text as well as by its id and offsets.
"""

from __future__ import annotations

from ctxselect import api
from ctxselect.agent import Sessions
from ctxselect.config import ChunkSpec

SPEC = ChunkSpec(chunker="markdown", size=30)  # about a section a chunk

SECTIONS = {
    "Parsing": "The parser reads the lexicon of walrus tokens and the grammar rules.",
    "Caching": "The cache keeps walrus results keyed by the lexicon hash for reuse.",
    "Logging": "Logs record each walrus request with its lexicon version and timing.",
}


def write(root, intro: str, extra: str = "") -> None:
    more = {"Caching": extra}
    body = "".join(f"## {h}\n\n{t}{more.get(h, '')}\n\n" for h, t in SECTIONS.items())
    (root / "guide.md").write_text(f"# Guide\n\n{intro}\n\n{body}", encoding="utf-8")


def open_sessions(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    write(root, "An introduction.")
    folder = tmp_path / "ix"
    api.index_paths([root], folder, chunk=SPEC)
    return root, folder, Sessions.open(str(folder))


def test_chunks_moved_by_an_edit_above_them_come_back_as_references(tmp_path):
    root, folder, sessions = open_sessions(tmp_path)
    try:
        first = sessions.select("s", "walrus lexicon", budget=2000, stop="none")
        sent = {p.text for p in first.pieces}
        assert sum(len(p.chunk_ids) for p in first.pieces) >= 3
        write(root, "An introduction.\n\nA second line added above every section.")
        api.index_paths([root], folder, chunk=SPEC)
        again = sessions.select("s", "walrus lexicon", budget=2000, stop="none")
        assert again.references, "the moved, unchanged sections are references"
        assert all(ref.call == first.call for ref in again.references)
        assert not {p.text for p in again.pieces} & sent, "no text the session has is re-sent"
        refs = [r.chunk_id for r in again.references]
        assert all(r.startswith("guide.md#") for r in refs)
    finally:
        sessions.close()


def test_a_chunk_whose_text_changed_is_sent_again(tmp_path):
    root, folder, sessions = open_sessions(tmp_path)
    try:
        sessions.select("s", "walrus lexicon", budget=2000, stop="none")
        write(root, "An introduction.", extra=" Entries expire after one walrus hour.")
        api.index_paths([root], folder, chunk=SPEC)
        again = sessions.select("s", "walrus lexicon", budget=2000, stop="none")
        changed = [p for p in again.pieces if "expire" in p.text]
        assert changed, "the edited section is new material"
        assert all("expire" not in r.text for r in again.references)
    finally:
        sessions.close()


def test_grep_and_get_chunk_know_moved_text_too(tmp_path):
    root, folder, sessions = open_sessions(tmp_path)
    try:
        first = sessions.select("s", "walrus lexicon", budget=2000, stop="none")
        write(root, "An introduction.\n\nA second line added above every section.")
        api.index_paths([root], folder, chunk=SPEC)
        moved = next(c for c in api.open_index(folder).table.chunk_ids if c != "guide.md#0")
        chunk = sessions.get_chunk("s", moved)
        assert chunk.note.startswith(f"already provided in call {first.call}")
        found = sessions.grep("s", "walrus request", budget=500, context=4)
        assert found.references and not found.blocks
    finally:
        sessions.close()

"""Five short notes for the retrieval examples, shared by the retrieve, API and CLI tests.

"reset" occurs in notes 2 and 4, "synchronizer" in notes 2 and 5, "metastability" only in
note 2; notes 1 and 3 contain none of them (nor plurals or words that contain them).
With five chunks: idf(reset) = idf(synchronizer) = ln(5/2), idf(metastability) = ln(5).
"""

from __future__ import annotations

from ctxselect.types import Chunk, ChunkTable

NOTES: dict[str, str] = {
    "note1": "Clock gating saves dynamic power in large designs.",
    "note2": (
        "An external reset must pass through a synchronizer to avoid metastability "
        "in the flip-flops."
    ),
    "note3": "Timing closure depends on careful floorplanning and placement.",
    "note4": "Hold the reset line low for ten cycles after power comes up.",
    "note5": "A two-stage synchronizer carries the handshake signal into the fast domain.",
}

QUERY = "reset synchronizer metastability"


def five_notes_table() -> ChunkTable:
    """Return the notes as a ChunkTable: one chunk per note, doc ids note1..note5."""
    chunks = [Chunk(f"{doc_id}#0", doc_id, 0, 0, len(text), text) for doc_id, text in NOTES.items()]
    return ChunkTable.from_chunks(chunks)

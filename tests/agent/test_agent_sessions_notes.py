"""The note of a session's selection says why it is empty, as a plain selection does."""

from __future__ import annotations

from ctxselect import api
from ctxselect.agent import Sessions, context_text


def test_a_budget_below_every_chunk_says_so_not_no_hits(tmp_path):
    folder = tmp_path / "code"
    folder.mkdir()
    body = "\n".join(f"    total = total + value_{n} * weight_{n}  # accumulate" for n in range(60))
    (folder / "weights.py").write_text(f"def weighted(total):\n{body}\n    return total\n")
    index_dir = str(tmp_path / "ix")
    api.index_paths([str(folder)], index=index_dir)
    query = "accumulate weighted total"
    plain = api.open_index(index_dir).select(query, 100)
    assert not plain.chunks and "smaller than the smallest framed chunk" in plain.note
    service = Sessions.open(index_dir)
    try:
        result = service.select("s", query, 100)
    finally:
        service.close()
    assert not result.pieces and not result.references
    assert result.note == plain.note, "the session says why, as Index.select does"
    assert "no hits" not in context_text(result)

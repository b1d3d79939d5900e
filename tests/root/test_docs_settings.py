"""What the chapters say about re-indexing with some flags left out is what `index` does."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

import ctxselect as cs
from _support.datasets import REPO
from ctxselect.interfaces.cli.main import cli, register_commands


def _settings(folder: Path) -> dict[str, object]:
    settings = cs.open_index(folder).info().settings
    return {**settings["chunk"], **{f"bm25.{k}": v for k, v in settings["bm25"].items()}}


def test_a_flag_left_out_keeps_the_index_setting_as_the_chapters_say(tmp_path: Path) -> None:
    root, folder = tmp_path / "docs", tmp_path / "ix"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nSome words about signing keys and rotation.\n")
    chunk = cs.ChunkSpec(chunker="tokens", size=256, tokenizer="chars4")
    bm25 = cs.BM25Params(k1=1.2, b=0.5, stem=False)
    cs.index_paths([root], folder, chunk=chunk, bm25=bm25)

    register_commands()
    for flags in (["--size", "128"], ["--k1", "1.0"]):  # one flag of each group
        done = CliRunner().invoke(cli, ["index", "--index", str(folder), *flags])
        assert done.exit_code == 0, done.output
    kept = _settings(folder)
    assert (kept["chunker"], kept["size"], kept["tokenizer"]) == ("tokens", 128, "chars4")
    assert (kept["bm25.k1"], kept["bm25.b"], kept["bm25.stem"]) == (1.0, 0.5, False)

    index_chapter = (REPO / "docs/09-index.md").read_text(encoding="utf-8")
    retrieval_chapter = (REPO / "docs/05-retrieval.md").read_text(encoding="utf-8")
    assert "every flag you leave out keeps the index's recorded\nvalue" in index_chapter
    assert "A flag you leave out keeps the index's own value, and so do\nstemming" in (
        retrieval_chapter
    )

"""``chunk_file`` and ``ctxselect chunk``: a file that gives no document is an error naming why.

The same reasons ``index`` reports (unsupported type, binary, too large, HTML without
text) stop ``chunk`` with one ``error:`` line and exit 1; an empty file gives no chunks and
says so on stderr, as does a source file the ``code`` chunker cut by tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxselect.api.chunking import chunk_file
from ctxselect.config import ChunkSpec
from ctxselect.errors import InputError
from ctxselect.ingest import load_paths
from ctxselect.interfaces.cli import commands  # noqa: F401  (registers `chunk`)
from ctxselect.interfaces.cli.main import cli

SKIPPED = [
    ("notes.odt", b"a line of text\n", "no loader handles .odt files", "rename it"),
    ("table.csv", b"a,b\n1,2\n", "no loader handles .csv files", "supported extension"),
    ("image.txt", b"\x89PNG\x00\x00\x01binary", "binary", "pass a text file"),
    ("page.html", b"<html><script>x()</script></html>", "no body text", "rendered HTML"),
]


@pytest.mark.parametrize(("name", "data", "why", "fix"), SKIPPED)
def test_a_file_that_gives_no_document_is_an_error_naming_why(
    tmp_path: Path, name: str, data: bytes, why: str, fix: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError, match=f"cannot chunk {path}: .*{why}.*{fix}"):
        chunk_file(path)
    result = CliRunner().invoke(cli, ["chunk", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: cannot chunk {path}: ")
    assert result.stderr.count("\n") == 1 and why in result.stderr and fix in result.stderr


def test_a_file_above_max_bytes_is_named_with_its_size_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("word " * 100, encoding="utf-8")
    reason = load_paths([path], max_bytes=100).report.skip_reason(str(path))
    assert reason.startswith(f"{path}: too large: 500 bytes > --max-bytes 100; ")
    assert "split it into smaller files" in reason


def test_chunk_takes_index_s_max_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("word " * 100, encoding="utf-8")
    with pytest.raises(InputError, match="too large: 500 bytes > --max-bytes 100; "):
        chunk_file(path, max_bytes=100)
    assert [c.text for c in chunk_file(path, max_bytes=500)] == [("word " * 100).strip()]
    result = CliRunner().invoke(cli, ["chunk", "--max-bytes", "100", str(path)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"error: cannot chunk {path}: too large: 500 bytes")
    assert result.stderr.count("\n") == 1
    bad = CliRunner().invoke(cli, ["chunk", "--max-bytes", "0", str(path)])
    assert bad.exit_code == 2 and "--max-bytes" in bad.stderr


def test_an_empty_file_gives_no_chunks_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("  \n\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="empty.txt is empty or whitespace only: no chunks"):
        assert chunk_file(path) == []
    result = CliRunner().invoke(cli, ["chunk", str(path)])
    assert result.exit_code == 0
    assert result.stderr == f"warning: {path} is empty or whitespace only: no chunks\n"


def test_code_cut_by_tokens_is_said_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "tool.rb"
    path.write_text("def greet\n  puts 'hi'\nend\n", encoding="utf-8")
    with pytest.warns(UserWarning, match=r"tool.rb: cut by tokens, not parsed as code \(no gram"):
        chunks = chunk_file(path, ChunkSpec(chunker="code"))
    assert [c.text for c in chunks] == ["def greet\n  puts 'hi'\nend"]
    result = CliRunner().invoke(cli, ["chunk", "--chunker", "code", str(path)])
    assert result.exit_code == 0 and "tool.rb#0" in result.stdout
    assert result.stderr.startswith("warning: tool.rb: cut by tokens, not parsed as code")


def test_a_text_file_chunks_without_a_warning(tmp_path: Path, recwarn) -> None:
    path = tmp_path / "ok.py"
    path.write_text("x = 1\n", encoding="utf-8")
    assert [c.text for c in chunk_file(path)] == ["x = 1"]
    assert [str(w.message) for w in recwarn] == []

"""CLI paper cuts: how `remove` says what a document id looks like, and counts of one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import fails, run

from ctxselect.interfaces.cli.render import counted, mcp_banner
from ctxselect.interfaces.cli.store import compact_text
from ctxselect.types import CompactReport, IndexInfo


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with docs/a.md and b.py, indexed into ./idx, as the current folder."""
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n\nalpha words\n", encoding="utf-8")
    (root / "b.py").write_text("def beta():\n    return 1\n", encoding="utf-8")
    monkeypatch.chdir(root)
    run("index", ".", "--index", "idx")
    return root


@pytest.mark.parametrize(
    "given",
    ["./docs/a.md", "docs/a.mdd", "{root}/docs/a.md"],
    ids=["dot-slash", "typo", "absolute"],
)
def test_remove_of_an_unknown_id_names_the_id_meant_and_how_ids_look(project, given):
    err = fails("remove", given.format(root=project), "--index", "idx")
    assert "nothing was removed" in err and "did you mean 'docs/a.md'?" in err
    assert f"document ids are file paths relative to {project} " in err
    assert "such as 'b.py', 'docs/a.md'" in err
    run("search", "alpha", "--index", "idx")  # the index is untouched


def test_remove_from_a_sub_folder_suggests_the_id_of_the_path_given(project, monkeypatch):
    monkeypatch.chdir(project / "docs")
    err = fails("remove", "a.md", "--index", "../idx")  # the shell's path, not the id
    assert "did you mean 'docs/a.md'?" in err


def test_remove_of_ids_nothing_resembles_still_says_how_ids_look(project):
    err = fails("remove", "zzz", "qqq", "--index", "idx")
    assert err.startswith("error: no documents 'zzz', 'qqq' in index idx")
    assert "did you mean" not in err and f"relative to {project} " in err


def test_one_document_and_one_chunk_are_singular(project):
    (project / "b.py").unlink()
    (project / "docs" / "a.md").write_text("# A\n\nalpha words, changed\n", encoding="utf-8")
    out = run("index", "--index", "idx").output
    assert out.startswith("idx: 1 document, 1 chunk (0 added, 1 updated, 1 removed")
    assert "(1 chunk)" in run("compact", "--index", "idx").output


def test_counted_is_plural_for_every_count_but_one():
    assert [counted(n, "chunk") for n in (0, 1, 2)] == ["0 chunks", "1 chunk", "2 chunks"]
    assert counted(1, "query", "queries") == "1 query"
    assert counted(3, "query", "queries") == "3 queries"
    one = CompactReport("ix", 1, 2, 3, 0.5)
    merged = "ix: 2 delta segment(s) merged, 3 deleted row(s) dropped, 1 chunk, 0.50 s"
    assert compact_text(one) == merged
    info = IndexInfo("ix", 1, 1, 9, 0, 4, {}, ("bm25",), "", "")
    assert "(1 document, 1 chunk)" in mcp_banner(info, ["search"], "stdio", 4000)


def _help_of(command: str) -> str:
    return " ".join(run(command, "--help").output.split())  # one line: no wrapping


def test_index_help_says_a_flag_left_out_keeps_the_index_s_own_setting():
    text = _help_of("index")
    for default in ("auto", "512", "0", "cl100k", "1.5", "0.75", "off", "50,000"):
        assert f"(default: the index's, else {default}" in text, default
    assert "(default 512)" not in text and "(default 1.5)" not in text


def test_chunk_help_keeps_the_built_in_defaults_as_it_reads_no_index():
    text = _help_of("chunk")
    assert "(default 512)" in text and "the index's" not in text


def test_a_file_name_with_a_line_break_stays_on_one_line_of_the_output(tmp_path, monkeypatch):
    root = tmp_path / "odd"
    root.mkdir()
    (root / "new\nline.md").write_text("# nl\n\nnewline words\n", encoding="utf-8")
    (root / "dead\nlink.md").symlink_to(root / "nowhere")
    monkeypatch.chdir(tmp_path)
    out = run("index", "odd", "--index", "ix").output
    assert "/odd/dead\\nlink.md: broken symlink\nstatus:" in out
    hit = run("search", "newline", "--index", "ix").output
    assert hit.count("\n") == 1 and "new\\nline.md#0  lines 1-3" in hit
    summary = run("select", "newline", "--index", "ix").stderr.splitlines()
    assert summary[1].startswith("   new\\nline.md lines 1-3 ") and len(summary) == 2
    run("remove", "new\nline.md", "--index", "ix")  # the id itself holds the line break


def test_files_decoded_with_replacement_are_not_reported_as_skipped(tmp_path, monkeypatch):
    root = tmp_path / "latin"
    root.mkdir()
    (root / "cafe.txt").write_bytes(b"caf\xe9 au lait\n")
    monkeypatch.chdir(tmp_path)
    out = run("index", "latin", "--index", "ix").output
    assert out.startswith("ix: 1 document, 1 chunk (1 added") and "skipped:" not in out
    assert "loaded with invalid UTF-8 replaced by U+FFFD: 1 file: " in out
    assert f"{root / 'cafe.txt'} (save them as UTF-8" in out  # named, so it can be fixed
    report = json.loads(run("index", "latin", "--index", "ix2", "--json").output)
    assert report["replaced_files"] == [str(root / "cafe.txt")]


def test_a_file_whose_name_starts_with_a_dash_gets_a_hint_to_use_double_dash(tmp_path, monkeypatch):
    (tmp_path / "-notes.txt").write_text("notes on budgets\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    stderr = fails("chunk", "-notes.txt", code=2)
    assert "No such option '-n'. (-notes.txt is read as options" in stderr
    assert "put -- before it: ctxselect chunk [OPTIONS] -- -notes.txt" in stderr
    assert "-notes.txt#0" in run("chunk", "--", "-notes.txt").output  # the hint works
    assert "read as options" not in fails("chunk", "-nope.txt", code=2)  # no such file


def test_ctrl_c_while_the_commands_load_is_one_line_and_exit_130(monkeypatch, capsys):
    # sent in the first half second, it printed a traceback through the imports
    from ctxselect.interfaces.cli import main as entry

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(entry, "_import_command_module", interrupted)
    monkeypatch.setattr(entry.cli, "commands", {})  # as in a fresh process: none loaded
    monkeypatch.setattr("sys.argv", ["ctxselect", "search", "budget"])
    with pytest.raises(SystemExit) as ended:
        entry.main()
    assert ended.value.code == 130
    assert capsys.readouterr().err == "interrupted while starting: nothing was read or written\n"

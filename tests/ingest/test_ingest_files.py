"""load_paths on small trees: doc ids, loaders, normalisation, ordering and hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ctxselect.errors import ConfigError, InputError
from ctxselect.ingest import IngestResult, content_hash, load_paths


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create ``files`` (relative path -> content) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")


def by_id(result: IngestResult) -> dict[str, object]:
    return {d.doc_id: d for d in result.documents}


def test_folder_root_ids_are_relative_and_slash_separated(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "alpha", "sub/deep/b.md": "# B\n\nbeta", "sub/c.py": "x = 1\n"})
    result = load_paths([tmp_path])
    assert [d.doc_id for d in result.documents] == ["a.txt", "sub/c.py", "sub/deep/b.md"]
    assert result.report.loaded == 3
    assert result.documents[0].source == str(tmp_path / "a.txt")


def test_single_file_root_id_is_its_name(tmp_path: Path) -> None:
    write(tmp_path, {"deep/dir/notes.txt": "hello"})
    result = load_paths(tmp_path / "deep" / "dir" / "notes.txt")
    (doc,) = result.documents
    assert doc.doc_id == "notes.txt"
    assert doc.text == "hello"
    assert doc.kind == "text"


def test_several_roots_are_relative_to_common_parent(tmp_path: Path) -> None:
    write(tmp_path, {"proj/docs/x.md": "x", "proj/src/x.md": "y", "proj/README.txt": "r"})
    proj = tmp_path / "proj"
    result = load_paths([proj / "docs", proj / "src", proj / "README.txt"])
    assert [d.doc_id for d in result.documents] == ["README.txt", "docs/x.md", "src/x.md"]


def test_same_folder_names_under_different_parents_stay_unique(tmp_path: Path) -> None:
    write(tmp_path, {"a/docs/x.txt": "one", "b/docs/x.txt": "two"})
    result = load_paths([tmp_path / "a" / "docs", tmp_path / "b" / "docs"])
    assert [d.doc_id for d in result.documents] == ["a/docs/x.txt", "b/docs/x.txt"]


def test_nested_and_repeated_roots_load_each_file_once(tmp_path: Path) -> None:
    write(tmp_path, {"top.txt": "t", "sub/inner.txt": "i"})
    result = load_paths([tmp_path, tmp_path / "sub", tmp_path])
    assert [d.doc_id for d in result.documents] == ["sub/inner.txt", "top.txt"]


def test_missing_root_raises_input_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(InputError, match=r"nope.*does not exist"):
        load_paths([missing])


def test_no_paths_and_bad_max_bytes_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no paths"):
        load_paths([])
    with pytest.raises(ConfigError, match="max_bytes"):
        load_paths([tmp_path], max_bytes=0)


def test_loader_kinds_by_extension(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.txt": "t",
            "b.rst": "r",
            "c.md": "# m",
            "d.markdown": "# m",
            "e.py": "p",
            "f.go": "g",
            "Makefile": "all:\n\ttrue\n",
            "Dockerfile": "FROM scratch\n",
            "g.yaml": "k: v",
            "h.html": "<p>h</p>",
            "LICENSE": "plain text licence",
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "data.xyz": "text but unknown extension",
        },
    )
    result = load_paths(tmp_path)
    kinds = {d.doc_id: d.kind for d in result.documents}
    assert kinds == {
        "a.txt": "text",
        "b.rst": "rst",
        "c.md": "markdown",
        "d.markdown": "markdown",
        "e.py": "code",
        "f.go": "code",
        "Makefile": "code",
        "Dockerfile": "code",
        "g.yaml": "code",
        "h.html": "html",
        "LICENSE": "text",
    }
    assert result.report.unsupported == 2


def test_extensionless_binary_file_is_counted_binary(tmp_path: Path) -> None:
    write(tmp_path, {"blob": b"\x00\x01\x02" * 100, "README": "words"})
    result = load_paths(tmp_path)
    assert [d.doc_id for d in result.documents] == ["README"]
    assert result.report.binary == 1
    assert result.report.unsupported == 0


def test_crlf_cr_and_bom_are_normalised_and_offsets_point_into_text(tmp_path: Path) -> None:
    raw = "\ufeffline one\r\nline two\rline three\n\r\nend"
    write(tmp_path, {"a.txt": raw.encode("utf-8")})
    (doc,) = load_paths(tmp_path).documents
    assert doc.text == "line one\nline two\nline three\n\nend"
    start = doc.text.index("line three")
    assert doc.text[start : start + len("line three")] == "line three"
    assert "\r" not in doc.text and not doc.text.startswith("\ufeff")


def test_other_whitespace_is_kept_verbatim(tmp_path: Path) -> None:
    raw = "  indented\ttab  \n\n\n   trailing   \n"
    write(tmp_path, {"a.txt": raw})
    (doc,) = load_paths(tmp_path).documents
    assert doc.text == raw


def test_html_title_and_block_text(tmp_path: Path) -> None:
    page = """<!doctype html><html><head><title> The   Page </title>
    <style>p { color: red }</style><script>var secret = 1;</script></head>
    <body><nav><a href="/">Home</a> <a href="/x">Menu item</a></nav>
    <h1>Heading</h1><p>First <b>para</b>
    wraps here.</p><p>Second para.</p><footer>foot</footer></body></html>"""
    write(tmp_path, {"page.html": page})
    (doc,) = load_paths(tmp_path).documents
    assert doc.kind == "html"
    assert doc.title == "The Page"
    assert doc.text == "Heading\n\nFirst para wraps here.\n\nSecond para.\n\nfoot"
    assert "secret" not in doc.text and "Menu item" not in doc.text and "color" not in doc.text
    assert doc.content_hash == content_hash("The Page", doc.text)


def test_html_without_visible_text_is_empty(tmp_path: Path) -> None:
    write(tmp_path, {"blank.htm": "<html><head><title>T</title></head><body> </body></html>"})
    result = load_paths(tmp_path)
    assert result.documents == ()
    assert result.report.empty == 1


def test_content_hash_is_sha256_of_title_nul_text_and_stable(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "héllo"})
    first = load_paths(tmp_path).documents[0]
    again = load_paths(tmp_path).documents[0]
    expected = hashlib.sha256("\x00héllo".encode()).hexdigest()
    assert first.content_hash == again.content_hash == expected
    (tmp_path / "a.txt").write_text("héllo!", encoding="utf-8")
    assert load_paths(tmp_path).documents[0].content_hash != expected


def test_output_is_sorted_and_identical_across_runs(tmp_path: Path) -> None:
    names = [f"d{i % 7}/f{(i * 37) % 50:02d}.txt" for i in range(50)]
    write(tmp_path, {name: f"content {name}" for name in names})
    first = load_paths(tmp_path)
    second = load_paths(tmp_path)
    ids = [d.doc_id for d in first.documents]
    assert ids == sorted(ids)
    assert len(ids) == len(set(names))
    assert first == second


def test_progress_bar_writes_to_stderr_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"a.txt": "x" * 1000})
    load_paths(tmp_path, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ingest" in captured.err
    load_paths(tmp_path, progress=False)
    assert capsys.readouterr().err == ""

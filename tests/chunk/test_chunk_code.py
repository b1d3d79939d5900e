"""The code chunker: definition boundaries, scope headers, size limits, offsets, fallback."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tree_sitter", reason="the code extra: pip install 'ctxselect[code]'")

from ctxselect.chunk import AutoChunker, CodeChunker, make_chunker
from ctxselect.chunk.code import code_language
from ctxselect.config import ChunkSpec
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, Document

CL100K = get_counter("cl100k")
HEADER = re.compile(r"^(?P<path>.+) \(lines (?P<first>\d+)-(?P<last>\d+)\)$")

# Two definitions per language, each small; the second is what the tests look for.
SOURCES = {
    "pkg/mod.py": (
        "import os\n\n\nclass Parser:\n    def feed(self, data):\n        return data\n\n\n"
        "def parse_http_header(line):\n    key, _, value = line.partition(':')\n"
        "    return key, value.strip()\n",
        "def parse_http_header",
    ),
    "web/app.js": (
        "class Parser {\n  feed(s) { this.buf += s; }\n}\n\n"
        "function parseHttpHeader(line) {\n  const i = line.indexOf(':');\n"
        "  return [line.slice(0, i), line.slice(i + 1)];\n}\n",
        "function parseHttpHeader",
    ),
    "web/app.ts": (
        "export class Parser {\n  private buf = '';\n  feed(s: string): void { this.buf += s; }\n}"
        "\n\nexport function parseHttpHeader(line: string): string[] {\n"
        "  return line.split(':');\n}\n",
        "function parseHttpHeader",
    ),
    "cmd/main.go": (
        "package main\n\ntype Parser struct {\n\tbuf string\n}\n\n"
        "func ParseHTTPHeader(line string) string {\n\treturn line\n}\n",
        "func ParseHTTPHeader",
    ),
    "src/lib.rs": (
        "pub struct Parser { buf: String }\n\n"
        "pub fn parse_http_header(line: &str) -> Option<(&str, &str)> {\n"
        "    line.split_once(':')\n}\n",
        "fn parse_http_header",
    ),
    "src/Parser.java": (
        "package a;\n\nclass Parser {\n    void feed(String s) {}\n}\n\n"
        "class Headers {\n    static String parseHttpHeader(String line) {\n"
        "        return line.trim();\n    }\n}\n",
        "class Headers",
    ),
    "src/parse.c": (
        "#include <string.h>\n\nstruct parser { char *buf; };\n\n"
        "static char *parse_http_header(char *line) {\n    return strchr(line, ':');\n}\n",
        "function parse_http_header",
    ),
    "src/parse.cpp": (
        "namespace http {\nclass Parser {\n public:\n  void feed(const char *s);\n};\n\n"
        "const char *parse_header(const char *line) {\n  return line;\n}\n}  // namespace http\n",
        "function parse_header",
    ),
}


def chunk(doc_id: str, text: str, size: int = 40, overlap: int = 0) -> list[Chunk]:
    doc = Document(doc_id, text, kind="code")
    chunks = CodeChunker(size, overlap, CL100K).chunk(doc)
    check(doc, chunks, size)
    return chunks


def check(doc: Document, chunks: list[Chunk], size: int) -> None:
    """Exact offsets, the size limit, line ranges in headers, no text lost."""
    covered = [False] * len(doc.text)
    for ordinal, c in enumerate(chunks):
        assert c.chunk_id == f"{doc.doc_id}#{ordinal}"
        assert doc.text[c.start : c.end] == c.text
        assert c.text.strip() == c.text != ""
        assert c.n_tokens == CL100K.count(c.text) <= size
        match = HEADER.match(c.header)
        assert match is not None, c.header
        assert match["path"].startswith(doc.doc_id)
        assert int(match["first"]) == doc.text.count("\n", 0, c.start) + 1
        assert int(match["last"]) == doc.text.count("\n", 0, c.end) + 1
        for i in range(c.start, c.end):
            covered[i] = True
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(doc.text))


@pytest.mark.parametrize("doc_id", sorted(SOURCES))
def test_each_language_cuts_at_definitions(doc_id: str) -> None:
    text, label = SOURCES[doc_id]
    name = label.split()[-1]
    line = next(ln for ln in text.splitlines() if name in ln).strip()
    cut = text.index(line)
    size = max(CL100K.count(text[:cut].strip()), CL100K.count(text[cut:].strip()))
    assert size < CL100K.count(text)
    chunks = chunk(doc_id, text, size=size)
    assert len(chunks) == 2
    # the cut falls where the second definition starts, and its label names the chunk
    assert chunks[1].start == cut
    assert label in chunks[1].header
    # with room for everything, the small definitions are packed into one chunk
    (whole,) = chunk(doc_id, text, size=2000)
    assert whole.header.startswith(f"{doc_id} > ")


def test_long_function_splits_at_statements_with_its_scope_path() -> None:
    body = "".join(f"        total_{i} = compute_value({i}, scale=factor)\n" for i in range(60))
    text = (
        "class Parser:\n    '''Feeds bytes.'''\n\n    def feed(self, factor):\n"
        f"{body}        return total_0\n\n    def close(self):\n        return None\n"
    )
    chunks = chunk("pkg/mod.py", text, size=80)
    feed = [c for c in chunks if c.header.startswith("pkg/mod.py > class Parser > def feed (")]
    assert len(feed) >= 5
    for c in feed:  # every piece is whole statements: cut at line starts, never mid-token
        assert text[c.start - 1] in "\n " and text[c.end : c.end + 1] in ("\n", "")
    assert any(c.header.startswith("pkg/mod.py > class Parser > def close") for c in chunks)


def test_header_shows_scope_path_and_line_range() -> None:
    text = "class Parser:\n" + "".join(
        f"    def m{i}(self):\n        return {i}\n\n" for i in range(40)
    )
    chunks = chunk("pkg/mod.py", text, size=60)
    c = next(c for c in chunks if "def m20" in c.text)
    first = text.count("\n", 0, c.start) + 1
    last = text.count("\n", 0, c.end) + 1
    assert c.header.startswith("pkg/mod.py > class Parser > def m")
    assert c.header.endswith(f"(lines {first}-{last})")


def test_huge_literal_is_cut_within_the_limit() -> None:
    text = "DATA = '" + "word " * 3000 + "'\n\ndef after():\n    return DATA\n"
    chunks = chunk("pkg/data.py", text, size=100)
    assert len(chunks) > 10
    assert "def after" in chunks[-1].header


def test_non_ascii_offsets_are_characters() -> None:
    text = "# héllo wörld 日本語 🙂\ndef naïve():\n    return 'ü'\n\n\ndef b():\n    return 1\n"
    chunks = chunk("pkg/u.py", text, size=12)
    assert any(c.text.startswith("def naïve") or "def naïve" in c.text for c in chunks)


def test_parse_failure_falls_back_to_tokens() -> None:
    text = "def broken(:\n    return\n" + "x = 1\n" * 50
    doc = Document("pkg/bad.py", text, kind="code")
    chunker = CodeChunker(40, 0, CL100K)
    assert "syntax error near line 1" in chunker.fallback(doc)
    chunks = chunker.chunk(doc)
    assert chunks == make_chunker(ChunkSpec("tokens", 40)).chunk(doc)


def test_unknown_language_falls_back_to_tokens() -> None:
    doc = Document("scripts/run.rb", "def hello\n  puts 'hi'\nend\n" * 30, kind="code")
    chunker = CodeChunker(40, 0, CL100K)
    assert chunker.fallback(doc) == "no grammar for .rb"
    assert chunker.chunk(doc) == make_chunker(ChunkSpec("tokens", 40)).chunk(doc)
    assert code_language("run.rb") is None and code_language("a/B.JAVA") == "tree_sitter_java"


def test_auto_uses_code_for_source_files_only() -> None:
    text, _ = SOURCES["pkg/mod.py"]
    auto = AutoChunker(30, 0, CL100K)
    code_doc = Document("pkg/mod.py", text, kind="code")
    assert auto.chunk(code_doc) == CodeChunker(30, 0, CL100K).chunk(code_doc)
    text_doc = Document("notes.txt", text, kind="text")
    assert auto.chunk(text_doc) == make_chunker(ChunkSpec("tokens", 30)).chunk(text_doc)
    ruby = Document("a.rb", "puts 1\n", kind="code")
    assert auto.chunker_for(ruby) is auto.tokens


def test_registered_and_in_the_factory() -> None:
    chunker = make_chunker(ChunkSpec("code", 50))
    assert isinstance(chunker, CodeChunker) and chunker.size == 50


def test_without_the_extra_code_says_how_to_install_and_auto_uses_tokens() -> None:
    program = (
        "import sys\n"
        "sys.modules['tree_sitter'] = None\n"  # an import of it now raises ImportError
        "from ctxselect.chunk import AutoChunker, make_chunker\n"
        "from ctxselect.config import ChunkSpec\n"
        "from ctxselect.errors import MissingExtraError\n"
        "from ctxselect.types import Document\n"
        "doc = Document('a.py', 'def f():\\n    return 1\\n', kind='code')\n"
        "auto = AutoChunker(50)\n"
        "assert auto.code is None and auto.chunker_for(doc) is auto.tokens\n"
        "try:\n"
        "    make_chunker(ChunkSpec('code', 50))\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "pip install 'ctxselect[code]'" in out.stdout


@st.composite
def python_source(draw: st.DrawFn) -> str:
    """Classes and functions of random sizes, comments, decorators and non-ASCII text."""
    names = st.sampled_from(["feed", "parse_header", "naïve", "日本", "x" * 40, "getHTTP"])
    blocks = []
    for kind in draw(st.lists(st.sampled_from(["def", "class", "comment", "stmt"]), max_size=8)):
        name = draw(names)
        body = "".join(
            f"    v{i} = {draw(names)!r} * {i}\n" for i in range(draw(st.integers(1, 30)))
        )
        if kind == "def":
            blocks.append(f"@decorator\ndef {name}(a, b):\n{body}")
        elif kind == "class":
            method = body.replace("\n    ", "\n        ")
            blocks.append(f"class {name.title()}:\n    def m(self):\n    {method}")
        elif kind == "comment":
            blocks.append(f"# {name} 🙂 comment")
        else:
            blocks.append(f"{name} = {body.strip()!r}")
    return "\n\n".join(blocks) + "\n"


@given(python_source(), st.integers(8, 200))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_offsets_and_size_limit(text: str, size: int) -> None:
    doc = Document("gen/mod.py", text, kind="code")
    chunker = CodeChunker(size, 0, CL100K)
    assert chunker.fallback(doc) == ""
    check(doc, chunker.chunk(doc), size)


def test_index_report_names_files_cut_by_tokens(tmp_path) -> None:
    import ctxselect as cs

    src = tmp_path / "src"
    src.mkdir()
    (src / "good.py").write_text(SOURCES["pkg/mod.py"][0], encoding="utf-8")
    (src / "bad.py").write_text("def broken(:\n    return 1\n", encoding="utf-8")
    (src / "run.rb").write_text("puts 'no grammar: tokens by design'\n", encoding="utf-8")
    report = cs.index_paths([src], tmp_path / "ix", embedder="none")
    assert report.token_fallbacks == (
        ("bad.py", "the .py grammar found a syntax error near line 1"),
    )
    assert report.skipped["code_as_tokens"] == 1
    with cs.open_index(tmp_path / "ix") as idx:
        headers = {h.doc_id: h.header for h in idx.search("broken parse_http_header puts", k=5)}
    assert headers["good.py"].startswith("good.py > ") and "(lines " in headers["good.py"]
    assert "(lines " not in headers["bad.py"]
    explicit = cs.index_paths(
        [src], tmp_path / "ix2", chunk=ChunkSpec("code", 100), embedder="none"
    )
    assert dict(explicit.token_fallbacks) == {
        "bad.py": "the .py grammar found a syntax error near line 1",
        "run.rb": "no grammar for .rb",
    }


def test_nesting_deeper_than_the_stack_is_cut_by_tokens() -> None:
    text = "x = " + "[" * 3000 + "]" * 3000 + "\n\ndef f():\n    return 1\n"
    doc = Document("deep.py", text, kind="code")
    chunks = CodeChunker(50, 0, CL100K).chunk(doc)
    assert chunks == make_chunker(ChunkSpec("tokens", 50)).chunk(doc)


@pytest.mark.parametrize(
    ("doc_id", "text"),
    [
        ("pkg/z.py", "\u200bx = 1\n"),  # a zero-width space the parser does not cover
        ("pkg/z.py", "\u200b\u200b# lead\ndef f():\n    return 1\n"),
        ("web/z.ts", "\ufeffexport const a = 1;\n"),
    ],
)
def test_text_before_the_first_node_is_in_the_first_chunk(doc_id: str, text: str) -> None:
    chunks = chunk(doc_id, text, size=40)
    assert chunks[0].start == 0 and chunks[0].text.startswith(text[0])


def test_a_same_line_comment_stays_with_its_line() -> None:
    lines = [f"    {n} = compute_{n}({i})  # explain {n}" for i, n in enumerate("abcdef")]
    text = "def big():\n" + "\n".join(lines) + "\n    return a + b\n"
    chunks = chunk("pkg/trail.py", text, size=20)
    assert len(chunks) > 3
    assert not any(c.text.startswith("#") for c in chunks)
    for n in "abcdef":
        assert any(f"{n} = compute_{n}" in c.text and f"# explain {n}" in c.text for c in chunks)


BRACES = (
    "export class Circle {\n  big(): void {\n"
    + "".join(f"    const v{i} = compute{i}(x, {i});\n" for i in range(20))
    + "  }\n}\n\nexport const arrow = (a: number): number => a * 2;\n"
)


@pytest.mark.parametrize("size", [40, 64, 100])
def test_a_lone_closing_brace_joins_the_chunk_before_it(size: int) -> None:
    chunks = chunk("web/brace.ts", BRACES, size=size)
    assert not any(set(c.text) <= set("}\n ") for c in chunks)
    tiny = [c.text for c in chunks if c.n_tokens <= 4]
    assert all(t.endswith("{") for t in tiny)  # an opener whose next chunk is full

"""User metadata at load time: Markdown front matter, BEIR metadata, a code file's language."""

from __future__ import annotations

import pytest

from _support.filter_corpus import write_beir, write_corpus
from ctxselect.errors import InputError
from ctxselect.ingest import load_paths
from ctxselect.ingest.fields import beir_fields, front_matter, language_of


def test_front_matter_reads_top_level_key_value_lines():
    text = (
        "---\n"
        'title: "Quoted: title"\n'
        "status: draft  # a comment\n"
        "tags: [a, b]\n"
        "author:\n"
        "  name: nested, skipped\n"
        "- a list item\n"
        "# a comment line\n"
        "empty:\n"
        "weight: 3\n"
        "---\n"
        "# Body\n\nstatus: not front matter\n"
    )
    assert front_matter(text) == (
        ("title", "Quoted: title"),
        ("status", "draft"),
        ("tags", "[a, b]"),
        ("weight", "3"),
    )


@pytest.mark.parametrize(
    "text",
    [
        "# Title\n\nkey: value\n",  # no front matter
        "---\nkey: value\nnever closed\n",  # not closed: not front matter
        "\n---\nkey: value\n---\n",  # must open on the first line
    ],
)
def test_text_without_closed_front_matter_has_no_fields(text):
    assert front_matter(text) == ()


def test_front_matter_may_close_with_dots():
    assert front_matter("---\nkind: note\n...\nbody\n") == (("kind", "note"),)


def test_beir_metadata_flattens_to_strings():
    metadata = {"year": 2020, "score": 0.5, "open": True, "tags": ["a", 1], "none": None,
                "nested": {"k": "v"}, "name": "x"}  # fmt: skip
    assert beir_fields(metadata, "c.jsonl:1") == (
        ("year", "2020"),
        ("score", "0.5"),
        ("open", "true"),
        ("tags", '["a",1]'),
        ("nested", '{"k":"v"}'),
        ("name", "x"),
    )
    assert beir_fields(None, "c.jsonl:1") == ()
    with pytest.raises(InputError, match=r'c.jsonl:3: "metadata" must be a JSON object'):
        beir_fields(["a"], "c.jsonl:3")


def test_language_comes_from_the_extension():
    assert language_of("src/a.py") == "python"
    assert language_of("web/App.TSX") == "typescript"
    assert language_of("x/build.gradle") == "gradle"
    assert language_of("Makefile") == "makefile"
    assert language_of("LICENSE") == ""


def test_loaders_attach_the_fields(tmp_path):
    docs = {d.doc_id: d for d in load_paths([write_corpus(tmp_path / "c")]).documents}
    assert docs["howto/h00.md"].fields == (
        ("title", "Howto 0"), ("section", "guide"), ("status", "draft")
    )  # fmt: skip
    assert docs["howto/h00.md"].text.startswith("---\ntitle: Howto 0\n")  # offsets unchanged
    assert docs["src/manage.ts"].fields == (("language", "typescript"),)
    assert docs["releases/r00.md"].fields == () and docs["garden.txt"].fields == ()
    beir = {d.doc_id: d for d in load_paths([write_beir(tmp_path / "b")]).documents}
    assert beir["d3"].fields == (("year", "2020"), ("venue", "garden"))
    assert beir["d4"].fields == ()


def test_beir_metadata_changes_the_content_hash_only_when_present(tmp_path):
    path = write_beir(tmp_path / "b")
    before = {d.doc_id: d.content_hash for d in load_paths([path]).documents}
    path.write_text(path.read_text().replace('"venue": "garden"', '"venue": "field"'))
    after = {d.doc_id: d.content_hash for d in load_paths([path]).documents}
    assert before["d3"] != after["d3"]  # re-indexed: its stored fields change
    assert before["d4"] == after["d4"]


@pytest.mark.parametrize(
    "text",
    [
        "---\n# Release notes\n- fixed the parser\n- faster index\n---\n\nThanks.\n",
        "---\ntitle: x\nJust prose, not YAML.\n---\nbody\n",
    ],
)
def test_a_block_that_is_not_yaml_like_metadata_gives_no_fields(text):
    assert front_matter(text) == ()
